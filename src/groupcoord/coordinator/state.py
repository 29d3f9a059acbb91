"""The classic group's five states and the table of legal transitions.

The table is the single source of truth: :func:`check_transition` enforces it at runtime
and ``scripts/gen_state_machine.py`` renders it into ``docs/state-machine.md``. An illegal
transition is a bug in the coordinator (never a client's fault) and raises
:class:`~groupcoord.errors.IllegalStateError`.
"""

from __future__ import annotations

import enum

from groupcoord.errors import IllegalStateError


class GroupState(enum.Enum):
    """The state names are the strings DescribeGroups and ListGroups put on the wire."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


E = GroupState.EMPTY
P = GroupState.PREPARING_REBALANCE
C = GroupState.COMPLETING_REBALANCE
S = GroupState.STABLE
D = GroupState.DEAD

#: target state -> states a group may be in when it moves there.
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    P: frozenset({S, C, E}),
    C: frozenset({P}),
    S: frozenset({C}),
    E: frozenset({P}),
    D: frozenset({S, P, C, E, D}),
}

#: Why each edge is taken, for the generated documentation (source -> target -> causes).
TRANSITION_CAUSES: dict[tuple[GroupState, GroupState], str] = {
    (E, P): "first member joins (initial rebalance delay armed)",
    (S, P): "new member, leader rejoin, follower with new metadata, leave, session expiry, "
    "pending-sync expiry, static protocol change, over group.max.size after load",
    (C, P): "new member, changed metadata, leave, session expiry, pending-sync expiry, "
    "static rejoin, failed assignment write",
    (P, C): "join phase complete with at least one member (generation + 1, protocol voted)",
    (P, E): "join phase complete with no member left (generation + 1, empty record written)",
    (C, S): "leader's SyncGroup assignment durably written",
    (E, D): "DeleteGroups, all offsets expired, partition unloaded",
    (P, D): "partition unloaded",
    (C, D): "partition unloaded",
    (S, D): "partition unloaded",
    (D, D): "partition unloaded again (no-op)",
}

#: Display order of the states in tables and diagrams.
STATE_ORDER: tuple[GroupState, ...] = (E, P, C, S, D)


def can_transition(source: GroupState, target: GroupState) -> bool:
    return source in VALID_PREVIOUS_STATES[target]


def check_transition(source: GroupState, target: GroupState) -> None:
    """Raise :class:`IllegalStateError` unless ``source -> target`` is in the table."""
    if not can_transition(source, target):
        raise IllegalStateError(f"illegal group state transition {source.value} -> {target.value}")


def can_rebalance(state: GroupState) -> bool:
    """Kafka's ``canRebalance``: the group may enter PreparingRebalance from here."""
    return can_transition(state, P)
