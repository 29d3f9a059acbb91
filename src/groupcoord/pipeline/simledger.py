"""Who processes which partition, instant by instant, in the simulator: what a rebalance costs.

The simulator tells the ledger every change of ownership its member cores report to their
application -- a partition assigned (the application may process it from now), revoked or lost
(it stops now) -- and every process that dies. An :class:`Episode` is one injected disruption,
from its instant to the first instant its group is settled again (every partition processed by a
live member, the coordinator and every member stable). Closed, it says what the rebalance cost:

* ``settle_ms``: the reconciliation time, disruption to settled;
* ``moved``: partitions whose processing member at the end is not the one at the start;
* ``stopped_partition_ms``: the partition-milliseconds nobody processed, within the episode;
* ``members_stopped``: members that processed partitions before and after the episode but, for a
  while in between, none (the classic eager protocol's stop-the-world pause), and the longest
  such pause (``max_member_stop_ms``);
* ``members_revoking``: members that gave up a partition (revoked or lost) during the episode;
* ``unaffected``: members live throughout whose partitions never changed.

The member the disruption is about (the one joining, leaving, crashing, restarting) is left out of
the three member counts: they count the *other* members' cost.

Partitions are ``(topic, partition)`` pairs and members their labels, so this module depends on
neither side's types.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

Partition = tuple[str, int]


@dataclass(frozen=True, kw_only=True, slots=True)
class EpisodeCost:
    group_id: str
    protocol: str
    disruption: str
    member: str
    start_ms: int
    settle_ms: int
    moved: int
    stopped_partition_ms: int
    members_stopped: int
    max_member_stop_ms: int
    members_revoking: int
    unaffected: int
    others: int  # members live throughout, other than the one the disruption is about
    members: int  # live at the end


@dataclass(slots=True)
class Episode:
    group_id: str
    protocol: str
    disruption: str
    member: str
    start_ms: int
    owners_at_start: dict[Partition, str | None]
    live_at_start: frozenset[str]
    first_change: int
    """Index of the group's first change after the opening (earlier ones of the same instant are
    already in ``owners_at_start``)."""


@dataclass(slots=True)
class _GroupLedger:
    partitions: tuple[Partition, ...]
    owner: dict[Partition, str | None] = field(default_factory=dict)
    #: (time, member, partition, +1 assigned / -1 released), in order
    changes: list[tuple[int, str, Partition, int]] = field(default_factory=list)
    open: Episode | None = None


class OwnershipLedger:
    def __init__(self) -> None:
        self._groups: dict[str, _GroupLedger] = {}
        self.closed: list[EpisodeCost] = []

    def add_group(self, group_id: str, partitions: Iterable[Partition]) -> None:
        parts = tuple(partitions)
        self._groups[group_id] = _GroupLedger(partitions=parts, owner=dict.fromkeys(parts))

    def assigned(self, group_id: str, member: str, partitions: Iterable[Partition], now: int) -> None:
        g = self._groups[group_id]
        for tp in partitions:
            if g.owner.get(tp) == member:
                continue
            prev = g.owner.get(tp)
            if prev is not None:
                # the simulator's members never own a partition twice; a second owner would be a
                # bug in a core, and the ledger says so rather than hiding it
                raise AssertionError(f"{tp} assigned to {member} at {now} while {prev} processes it")
            g.owner[tp] = member
            g.changes.append((now, member, tp, 1))

    def released(self, group_id: str, member: str, partitions: Iterable[Partition], now: int) -> None:
        g = self._groups[group_id]
        for tp in partitions:
            if g.owner.get(tp) == member:
                g.owner[tp] = None
                g.changes.append((now, member, tp, -1))

    def gone(self, group_id: str, member: str, now: int) -> None:
        """The process stopped: it processes nothing from now."""
        g = self._groups[group_id]
        self.released(group_id, member, [tp for tp, o in g.owner.items() if o == member], now)

    def all_processed(self, group_id: str) -> bool:
        return all(o is not None for o in self._groups[group_id].owner.values())

    def episode_open(self, group_id: str) -> bool:
        return self._groups[group_id].open is not None

    def open(
        self, group_id: str, protocol: str, disruption: str, member: str, now: int, live: Iterable[str]
    ) -> None:
        g = self._groups[group_id]
        if g.open is not None:
            raise AssertionError(f"{group_id}: an episode is already open ({g.open.disruption})")
        g.open = Episode(
            group_id=group_id,
            protocol=protocol,
            disruption=disruption,
            member=member,
            start_ms=now,
            owners_at_start=dict(g.owner),
            live_at_start=frozenset(live),
            first_change=len(g.changes),
        )

    def close(self, group_id: str, now: int, live: Iterable[str]) -> EpisodeCost:
        g = self._groups[group_id]
        ep = g.open
        if ep is None:
            raise AssertionError(f"{group_id}: no open episode")
        g.open = None
        live_end = frozenset(live)
        window = g.changes[ep.first_change :]
        # partitions nobody processed, per partition, within [start, now]
        stopped = 0
        for tp in g.partitions:
            owner = ep.owners_at_start.get(tp)
            since: int | None = ep.start_ms if owner is None else None
            for t, _m, p, d in window:
                if p != tp:
                    continue
                if d < 0:
                    since = t
                elif since is not None:
                    stopped += t - since
                    since = None
            if since is not None:
                stopped += now - since
        moved = sum(1 for tp in g.partitions if ep.owners_at_start.get(tp) != g.owner.get(tp))
        # members' own pauses: owning none for a while, owning some before and after
        counts: dict[str, int] = {}
        for o in ep.owners_at_start.values():
            if o is not None:
                counts[o] = counts.get(o, 0) + 1
        at_end: dict[str, int] = {}
        for o in g.owner.values():
            if o is not None:
                at_end[o] = at_end.get(o, 0) + 1
        others = (ep.live_at_start & live_end) - {ep.member}
        steady = {m for m in others if counts.get(m, 0) > 0 and at_end.get(m, 0) > 0}
        zero_since: dict[str, int] = {}
        pause: dict[str, int] = {}
        revoking: set[str] = set()
        touched: set[str] = set()
        for t, m, _p, d in window:
            touched.add(m)
            if d < 0:
                revoking.add(m)
            counts[m] = counts.get(m, 0) + d
            if counts[m] == 0 and d < 0:
                zero_since[m] = t
            elif d > 0 and m in zero_since:
                pause[m] = pause.get(m, 0) + t - zero_since.pop(m)
        stopped_members = {m for m in steady if m in pause}
        cost = EpisodeCost(
            group_id=group_id,
            protocol=ep.protocol,
            disruption=ep.disruption,
            member=ep.member,
            start_ms=ep.start_ms,
            settle_ms=now - ep.start_ms,
            moved=moved,
            stopped_partition_ms=stopped,
            members_stopped=len(stopped_members),
            max_member_stop_ms=max((pause[m] for m in stopped_members), default=0),
            members_revoking=len(revoking & others),
            unaffected=len(others - touched),
            others=len(others),
            members=len(live_end),
        )
        self.closed.append(cost)
        return cost


@dataclass(frozen=True, kw_only=True, slots=True)
class CostSummary:
    """The episodes of one protocol and one kind of disruption: medians, and the share of other
    members that never stopped."""

    protocol: str
    disruption: str
    episodes: int
    median_settle_ms: float
    median_moved: float
    median_stopped_partition_ms: float
    members_stopped: int
    max_member_stop_ms: int
    members_revoking: int
    unaffected: int
    other_members: int


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return float(ordered[mid]) if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def summarize(costs: Iterable[EpisodeCost]) -> list[CostSummary]:
    """One row per (protocol, disruption), sorted by disruption then protocol."""
    by: dict[tuple[str, str], list[EpisodeCost]] = {}
    for c in costs:
        by.setdefault((c.disruption, c.protocol), []).append(c)
    out = []
    for (disruption, protocol), cs in sorted(by.items()):
        out.append(
            CostSummary(
                protocol=protocol,
                disruption=disruption,
                episodes=len(cs),
                median_settle_ms=_median([c.settle_ms for c in cs]),
                median_moved=_median([c.moved for c in cs]),
                median_stopped_partition_ms=_median([c.stopped_partition_ms for c in cs]),
                members_stopped=sum(c.members_stopped for c in cs),
                max_member_stop_ms=max(c.max_member_stop_ms for c in cs),
                members_revoking=sum(c.members_revoking for c in cs),
                unaffected=sum(c.unaffected for c in cs),
                other_members=sum(c.others for c in cs),
            )
        )
    return out


def summary_table(costs: Iterable[EpisodeCost]) -> str:
    """The summary as a Markdown table (what ``groupcoord simulate`` prints)."""
    lines = [
        "| disruption | protocol | episodes | settle ms (median) | partitions moved (median) "
        "| partition-ms stopped (median) | other members stopped (longest ms) | revoking | unaffected |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summarize(costs):
        lines.append(
            f"| {s.disruption} | {s.protocol} | {s.episodes} | {s.median_settle_ms:.0f} | {s.median_moved:g} "
            f"| {s.median_stopped_partition_ms:.0f} | {s.members_stopped}/{s.other_members} "
            f"({s.max_member_stop_ms}) | {s.members_revoking}/{s.other_members} "
            f"| {s.unaffected}/{s.other_members} |"
        )
    return "\n".join(lines)
