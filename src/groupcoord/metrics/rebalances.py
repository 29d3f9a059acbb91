"""Rebalances counted by cause and timed, from the coordinator's group events.

A rebalance begins when a group enters PreparingRebalance; its cause is the reason of that
transition (:class:`~groupcoord.coordinator.events.EventReason`: ``new_member_joined``,
``member_left``, ``session_timeout`` ...), the same event ``__group_events`` records and the
pipeline reads. A group sent back to PreparingRebalance from CompletingRebalance (a sync
timeout, a member joining while the leader assigns) counts once more, with that cause, as
Kafka's ``prepareRebalance`` runs again.

A consumer group of KIP-848 has no PreparingRebalance: its rebalance begins with each bump of
its group epoch (an ``epoch_bump`` event, with the bump's cause) and is timed until the group is
Stable again (every member reconciled to the new assignment). Its members do not stop meanwhile.

The duration is the group's stop: from the first PreparingRebalance until it is Stable again
(the leader's assignment persisted), across any restarts in between, in the coordinator's
clock. A rebalance that ends with the group Empty or Dead (every member gone) is not timed.

Everything here runs on the broker's loop, as the events are made.
"""

from __future__ import annotations

from prometheus_client import Histogram

from groupcoord.coordinator.events import GroupEvent

_PREPARING = "PreparingRebalance"
_STABLE = "Stable"
_ENDED = ("Empty", "Dead")

#: Seconds: from a fast join (tens of ms) to the longest rebalance timeouts (minutes).
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


class RebalanceCounter:
    """Counts per (group, cause), and the duration histogram, fed :class:`GroupEvent` s."""

    def __init__(self, durations: Histogram) -> None:
        #: group id -> cause -> rebalances begun; a group's entry goes when it is Dead
        self.counts: dict[str, dict[str, int]] = {}
        self._durations = durations
        #: group id -> when its current rebalance began (coordinator ms)
        self._began: dict[str, int] = {}

    def on_event(self, event: GroupEvent) -> None:
        if event.type == "epoch_bump":
            # A consumer group (KIP-848) rebalances by bumping its epoch; it lasts until every
            # member has reconciled (the group is Stable again).
            self._begin(event)
            return
        if event.type != "state_change":
            return
        group, to = event.group_id, event.to_state
        if to == _PREPARING:
            self._begin(event)
        elif to == _STABLE:
            began = self._began.pop(group, None)
            if began is not None:
                self._durations.observe(max(event.time_ms - began, 0) / 1000.0)
        elif to in _ENDED:
            self._began.pop(group, None)
            if to == "Dead":
                self.counts.pop(group, None)

    def _begin(self, event: GroupEvent) -> None:
        causes = self.counts.setdefault(event.group_id, {})
        cause = event.reason.value
        causes[cause] = causes.get(cause, 0) + 1
        self._began.setdefault(event.group_id, event.time_ms)

    def copy(self) -> dict[tuple[str, str], int]:
        """(group, cause) -> count, for a snapshot (call on the loop)."""
        return {(g, c): n for g, causes in self.counts.items() for c, n in causes.items()}
