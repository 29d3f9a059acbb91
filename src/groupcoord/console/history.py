"""What the console remembers between page views, kept on the broker's loop: each group's
recent events and rebalances (from the coordinator's group events) and its lag over the last
minutes (from the console's lag sampling).

Everything is bounded: per group the last :data:`EVENTS_KEPT` events and
:data:`REBALANCES_KEPT` rebalances, and :data:`LAG_POINTS` lag samples for at most
:data:`LAG_GROUPS` groups; a group's history goes when the group is Dead. The work per event is
constant, except at the end of a rebalance (the group's move to Stable), where the owners of the
group's partitions are read once to say which moved: in proportion to the group's assignment,
as the coordinator's own work on that assignment is.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Mapping

from groupcoord.console.views import EventView, LagPoint, Move, RebalanceView
from groupcoord.coordinator.events import GroupEvent

#: events kept per group (the newest)
EVENTS_KEPT = 50
#: rebalances kept per group (the newest)
REBALANCES_KEPT = 20
#: lag samples kept per group, and for how many groups
LAG_POINTS = 150
LAG_GROUPS = 10_000
#: a lag sample equal to the last one is kept only when the last is older than this
LAG_REPEAT_MS = 15_000

#: (topic, partition) -> owning member id
Owners = Mapping[tuple[str, int], str]

_PREPARING = "PreparingRebalance"
_ENDS = ("Stable", "Empty", "Dead")


class _Rebalance:
    """A rebalance being recorded (:class:`RebalanceView` once read)."""

    __slots__ = (
        "_view",
        "begun",
        "ended",
        "generation_after",
        "members_after",
        "moved",
        "outcome",
        "restarts",
    )

    def __init__(self, begun: GroupEvent, members_before: int) -> None:
        self.begun = (begun, members_before)
        self.restarts: list[str] = []
        self.ended: int | None = None
        self.outcome: str | None = None
        self.generation_after: int | None = None
        self.members_after: int | None = None
        self.moved: tuple[Move, ...] = ()
        self._view: RebalanceView | None = None

    def changed(self) -> None:
        self._view = None

    def view(self) -> RebalanceView:
        """The value (made once per change: the overview reads every group's last one)."""
        if self._view is None:
            self._view = self._make_view()
        return self._view

    def _make_view(self) -> RebalanceView:
        ev, members_before = self.begun
        return RebalanceView(
            started_ms=ev.time_ms,
            cause=ev.reason.value,
            member_id=ev.member_id,
            client_id=ev.client_id,
            instance_id=ev.group_instance_id,
            client_host=ev.client_host,
            client_reason=ev.client_reason,
            generation_before=ev.generation,
            members_before=members_before,
            restarts=tuple(self.restarts),
            ended_ms=self.ended,
            outcome=self.outcome,
            generation_after=self.generation_after,
            members_after=self.members_after,
            moved=self.moved,
        )


class _GroupLog:
    __slots__ = ("events", "open", "owners", "rebalances", "stable_members")

    def __init__(self) -> None:
        self.events: deque[GroupEvent] = deque(maxlen=EVENTS_KEPT)
        self.rebalances: deque[_Rebalance] = deque(maxlen=REBALANCES_KEPT)
        self.open: _Rebalance | None = None
        #: owners at the last Stable (what the next rebalance's moves are counted from)
        self.owners: Owners = {}
        self.stable_members = 0


class GroupHistory:
    """Recent events and rebalances per group, fed :class:`GroupEvent` s on the loop.

    ``owners_of(group_id)`` gives the partitions' owners of a group as it is now (None when
    unknown): called when a rebalance ends, to record which partitions moved.
    """

    def __init__(self, owners_of: Callable[[str], Owners | None]) -> None:
        self._groups: dict[str, _GroupLog] = {}
        self._owners_of = owners_of

    def on_event(self, event: GroupEvent) -> None:
        gid = event.group_id
        glog = self._groups.get(gid)
        if glog is None:
            glog = self._groups[gid] = _GroupLog()
        glog.events.append(event)
        if event.type != "state_change":
            return
        to = event.to_state
        if to == _PREPARING:
            if glog.open is None:
                glog.open = _Rebalance(event, glog.stable_members)
                glog.rebalances.append(glog.open)
            else:
                glog.open.restarts.append(event.reason.value)
                glog.open.changed()
        elif to in _ENDS:
            owners: Owners = {}
            if to == "Stable":
                owners = self._owners_of(gid) or {}
                glog.stable_members = event.member_count
            elif to == "Empty":
                glog.stable_members = 0
            current = glog.open
            if current is not None:
                current.ended = event.time_ms
                current.outcome = to
                current.generation_after = event.generation
                current.members_after = event.member_count
                current.moved = _moves(glog.owners, owners)
                current.changed()
                glog.open = None
            glog.owners = owners
            if to == "Dead":
                del self._groups[gid]

    def rebalances(self, group_id: str) -> tuple[RebalanceView, ...]:
        glog = self._groups.get(group_id)
        return () if glog is None else tuple(r.view() for r in glog.rebalances)

    def last_rebalance(self, group_id: str) -> RebalanceView | None:
        glog = self._groups.get(group_id)
        return None if glog is None or not glog.rebalances else glog.rebalances[-1].view()

    def events(self, group_id: str) -> tuple[EventView, ...]:
        """Newest first."""
        glog = self._groups.get(group_id)
        if glog is None:
            return ()
        return tuple(
            EventView(
                time_ms=e.time_ms,
                type=e.type,
                reason=e.reason.value,
                from_state=e.from_state,
                to_state=e.to_state,
                generation=e.generation,
                member_id=e.member_id,
                client_id=e.client_id,
                instance_id=e.group_instance_id,
                client_host=e.client_host,
                client_reason=e.client_reason,
                member_count=e.member_count,
            )
            for e in reversed(glog.events)
        )


def _moves(before: Owners, after: Owners) -> tuple[Move, ...]:
    changed = sorted(tp for tp in before.keys() | after.keys() if before.get(tp) != after.get(tp))
    return tuple(
        Move(topic=t, partition=p, before=before.get((t, p)), after=after.get((t, p))) for t, p in changed
    )


class LagHistory:
    """A group's total lag (records) and worst time lag over the last minutes, as sampled.

    Samples are kept flat in an ``array('d')`` per group (time, lag, time lag): 24 bytes a
    sample, so the cap of :data:`LAG_GROUPS` x :data:`LAG_POINTS` stays under 40 MB. A sample
    that repeats the last one is skipped unless the last is :data:`LAG_REPEAT_MS` old, so a
    quiet group holds few."""

    def __init__(self) -> None:
        self._series: dict[str, array[float]] = {}

    def add(self, group_id: str, time_ms: int, lag: int, time_lag_ms: float, *, force: bool = False) -> None:
        series = self._series.get(group_id)
        if series is None:
            if len(self._series) >= LAG_GROUPS and not force:
                return
            series = self._series[group_id] = array("d")
        elif series[-2] == lag and series[-1] == time_lag_ms and time_ms - series[-3] < LAG_REPEAT_MS:
            return
        series.extend((time_ms, lag, time_lag_ms))
        if len(series) > 3 * LAG_POINTS:
            del series[:3]

    def forget(self, group_id: str) -> None:
        self._series.pop(group_id, None)

    def points(self, group_id: str) -> tuple[LagPoint, ...]:
        s = self._series.get(group_id)
        if s is None:
            return ()
        return tuple(
            LagPoint(time_ms=int(s[i]), lag=int(s[i + 1]), time_lag_ms=s[i + 2]) for i in range(0, len(s), 3)
        )
