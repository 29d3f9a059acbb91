"""What the console remembers between page views, kept on the broker's loop: each group's
recent events and rebalances (from the coordinator's group events) and its lag over the last
minutes (from the console's lag sampling).

A rebalance of a classic group runs from its move to PreparingRebalance until it is Stable,
Empty or Dead again. One of a KIP-848 consumer group runs from an ``epoch_bump`` until its members
have reconciled, which the group's next move to Stable (or Empty, Dead) says, as the pipeline's
``rebalances`` table counts them (``docs/pipeline.md``); a bump the group stays Stable through was
reconciled in the same write (it ends where it began), and one overtaken by the next bump before
the group was Stable ends there as ``Superseded``. The coordinator delivers a write's events
together, inside its call, so "no state change after the bump" is known once the write's events
are in: at the next bump, and whenever the history is read.

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
from dataclasses import replace

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
_BUMP = "epoch_bump"
#: the outcome of a consumer group's rebalance overtaken by its next epoch bump
SUPERSEDED = "Superseded"


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
        "protocol",
        "restarts",
        "state_at_start",
        "state_changed",
    )

    def __init__(
        self, begun: GroupEvent, members_before: int, *, protocol: str = "classic", state: str | None = None
    ) -> None:
        self.begun = (begun, members_before)
        #: ``classic`` or ``consumer`` (an epoch bump of a KIP-848 group)
        self.protocol = protocol
        #: consumer groups: the group's state when the bump came, and whether it changed since
        self.state_at_start = state
        self.state_changed = False
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
            # a consumer group's bump event carries the new epoch: the one before is one less
            generation_before=ev.generation - 1 if self.protocol == "consumer" else ev.generation,
            members_before=members_before,
            restarts=tuple(self.restarts),
            ended_ms=self.ended,
            outcome=self.outcome,
            generation_after=self.generation_after,
            members_after=self.members_after,
            moved=self.moved,
            protocol=self.protocol,
        )

    def end(self, time_ms: int, outcome: str, generation: int, members: int, moved: tuple[Move, ...]) -> None:
        self.ended = time_ms
        self.outcome = outcome
        self.generation_after = generation
        self.members_after = members
        self.moved = moved
        self.changed()


class _GroupLog:
    __slots__ = ("clients", "events", "open", "owners", "rebalances", "stable_members", "state")

    def __init__(self) -> None:
        self.events: deque[GroupEvent] = deque(maxlen=EVENTS_KEPT)
        self.rebalances: deque[_Rebalance] = deque(maxlen=REBALANCES_KEPT)
        self.open: _Rebalance | None = None
        #: owners at the last Stable (what the next rebalance's moves are counted from)
        self.owners: Owners = {}
        self.stable_members = 0
        #: the state the group's last state change went to
        self.state: str | None = None
        #: member id -> (client id, instance id, host) of the current members, from their events
        #: (a leave's epoch bump comes after the member is gone and names none of them)
        self.clients: dict[str, tuple[str | None, str | None, str | None]] = {}


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
        if event.type == _BUMP:
            event = self._named(glog, event)
        glog.events.append(event)
        if event.member_id is not None and event.client_id is not None:
            if event.type == "member_removed":
                glog.clients.pop(event.member_id, None)
            else:
                glog.clients[event.member_id] = (event.client_id, event.group_instance_id, event.client_host)
        if event.type == _BUMP:
            self._settle(gid, glog, event.time_ms)
            glog.open = _Rebalance(event, glog.stable_members, protocol="consumer", state=glog.state)
            glog.rebalances.append(glog.open)
            return
        if event.type != "state_change":
            return
        to = event.to_state
        if event.from_state is None and glog.state is not None:
            # a second "creation" of a group that exists: the offsets-only entry a consumer group's
            # first commit makes in the classic table (coordinator/consumer_groups.py) — not a
            # change of this group
            return
        if glog.open is not None and event.from_state is not None:
            glog.open.state_changed = True
        if event.from_state is not None or glog.state is None:
            glog.state = to
        if to == _PREPARING:
            if glog.open is None:
                glog.open = _Rebalance(event, glog.stable_members)
                glog.rebalances.append(glog.open)
            else:
                glog.open.restarts.append(event.reason.value)
                glog.open.changed()
        elif to in _ENDS and (event.from_state is not None or glog.open is None):
            # (a consumer group is born Empty in its first bump's own write: that ends nothing)
            owners: Owners = {}
            if to == "Stable":
                owners = self._owners_of(gid) or {}
                glog.stable_members = event.member_count
            elif to == "Empty":
                glog.stable_members = 0
            current = glog.open
            if current is not None:
                current.end(
                    event.time_ms, to, event.generation, event.member_count, _moves(glog.owners, owners)
                )
                glog.open = None
            glog.owners = owners
            if to == "Dead":
                del self._groups[gid]

    def _named(self, glog: _GroupLog, bump: GroupEvent) -> GroupEvent:
        """A bump caused by a leave names no member: the member_removed event just before it does,
        and the member's earlier events its client id, instance id and host."""
        member_id = bump.member_id
        if member_id is None and glog.events:
            last = glog.events[-1]
            if last.type == "member_removed" and last.time_ms == bump.time_ms:
                member_id = last.member_id
                if last.client_id is not None and bump.client_id is None:
                    # the removal names its client itself (and has dropped it from ``clients``)
                    return replace(
                        bump,
                        member_id=member_id,
                        client_id=last.client_id,
                        group_instance_id=last.group_instance_id,
                        client_host=last.client_host,
                    )
        if member_id is None or bump.client_id is not None:
            return bump
        client_id, instance_id, host = glog.clients.get(member_id, (None, None, None))
        return replace(
            bump, member_id=member_id, client_id=client_id, group_instance_id=instance_id, client_host=host
        )

    def _settle(self, gid: str, glog: _GroupLog, time_ms: int) -> None:
        """End a consumer group's open rebalance whose write is over without a state change: it
        was reconciled at once if the group stayed Stable (or Empty), else the bump at ``time_ms``
        supersedes it."""
        current = glog.open
        if current is None or current.protocol != "consumer" or current.state_changed:
            if current is not None and current.protocol == "consumer" and time_ms >= 0:
                self._supersede(glog, time_ms)
            return
        bump, _ = current.begun
        if current.state_at_start in _ENDS:
            owners = self._owners_of(gid) or {} if current.state_at_start == "Stable" else {}
            members = bump.member_count
            current.end(
                bump.time_ms, current.state_at_start, bump.generation, members, _moves(glog.owners, owners)
            )
            glog.owners = owners
            glog.open = None
        elif time_ms >= 0:
            self._supersede(glog, time_ms)

    @staticmethod
    def _supersede(glog: _GroupLog, time_ms: int) -> None:
        current = glog.open
        if current is not None:
            current.end(time_ms, SUPERSEDED, current.begun[0].generation, current.begun[0].member_count, ())
            glog.open = None

    def rebalances(self, group_id: str) -> tuple[RebalanceView, ...]:
        glog = self._groups.get(group_id)
        if glog is None:
            return ()
        self._settle(group_id, glog, -1)
        return tuple(r.view() for r in glog.rebalances)

    def last_rebalance(self, group_id: str) -> RebalanceView | None:
        glog = self._groups.get(group_id)
        if glog is None or not glog.rebalances:
            return None
        self._settle(group_id, glog, -1)
        return glog.rebalances[-1].view()

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
