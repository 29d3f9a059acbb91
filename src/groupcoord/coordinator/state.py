"""The classic group's five states: what each allows, and which transitions are legal.

Theory of operation
===================

A classic group (Kafka's ``ClassicGroup``) is always in one of five states. The normal cycle is

    Empty -> PreparingRebalance -> CompletingRebalance -> Stable -> PreparingRebalance -> ...

PreparingRebalance is the *join phase*: members rejoin and their JoinGroups are parked until
everyone known has rejoined or the rebalance timeout (``DelayedJoin``) ends it.
CompletingRebalance is the *sync phase*: the generation is bumped, every member has its
JoinGroup answer and waits, with a parked SyncGroup, for the leader's assignment. Stable lasts
until something changes membership or metadata. Empty is a group with no member (it may still
have committed offsets); Dead is a group being removed, which answers every request as if it
were not there.

Rules, in the spirit of h11's ``_state.py``:

1. Every change of state goes through :func:`check_transition`, via
   ``ClassicGroup.transition_to``, and the table :data:`VALID_PREVIOUS_STATES` is the only
   list of legal moves. An illegal move is a coordinator bug (never a client's fault) and
   raises :class:`~groupcoord.errors.IllegalStateError`.
2. Two moves are not transitions, and each has its own check here: a group read back from
   ``__consumer_offsets`` *starts* in Empty or Stable (:data:`LOADED_STATES`; Kafka constructs
   it in that state), and a transition made in anticipation of a write that then failed is
   *reverted* (``ClassicGroup.revert_state``; Kafka 4.x reverts its timeline state).
3. This file knows nothing about members, requests or records. What each state allows a
   request to do is stated in :data:`STATE_ACTIONS` (documentation rendered into
   ``docs/state-machine.md``) and implemented by the handlers in ``classic_group.py``,
   ``offsets.py``, ``groups.py`` and ``shard.py`` (DeleteGroups), which branch on the state in the
   same order.

``scripts/gen_state_machine.py`` renders these tables into ``docs/state-machine.md``;
``make test`` fails when the page is out of date.
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

#: Where a group read back from ``__consumer_offsets`` starts when its partition's load
#: completes: Stable if its record has members, else Empty (Kafka's ``ClassicGroup.fromRecord``
#: / ``GroupMetadataManager.loadGroup``). Not a transition: the group had no state before.
LOADED_STATES: frozenset[GroupState] = frozenset({S, E})

#: What each state allows, per request (Kafka's ``ClassicGroupState`` Javadoc and the
#: handlers' state branches). Rendered into ``docs/state-machine.md``.
STATE_ACTIONS: dict[GroupState, dict[str, str]] = {
    E: {
        "JoinGroup": "new member: added, group moves to PreparingRebalance (initial delay); "
        "known member id: UNKNOWN_MEMBER_ID",
        "SyncGroup": "UNKNOWN_MEMBER_ID",
        "Heartbeat": "UNKNOWN_MEMBER_ID",
        "LeaveGroup": "UNKNOWN_MEMBER_ID per member (pending members are removed)",
        "OffsetCommit": "accepted from an admin / simple client (generation -1, no member id)",
        "OffsetDelete": "deletes the offsets named",
        "DeleteGroups": "deleted (Dead once the tombstones are durable)",
    },
    P: {
        "JoinGroup": "parked until the join phase completes; a new member is added",
        "SyncGroup": "REBALANCE_IN_PROGRESS",
        "Heartbeat": "REBALANCE_IN_PROGRESS (session extended)",
        "LeaveGroup": "member removed; the join phase may complete",
        "OffsetCommit": "accepted from a member of the current generation",
        "OffsetDelete": "deletes offsets of topics no member subscribes to",
        "DeleteGroups": "NON_EMPTY_GROUP",
    },
    C: {
        "JoinGroup": "same metadata: the join answer again; new metadata: back to PreparingRebalance",
        "SyncGroup": "parked; the leader's assignment is written, then every parked SyncGroup answered",
        "Heartbeat": "NONE (session extended)",
        "LeaveGroup": "member removed, back to PreparingRebalance",
        "OffsetCommit": "REBALANCE_IN_PROGRESS",
        "OffsetDelete": "deletes offsets of topics no member subscribes to",
        "DeleteGroups": "NON_EMPTY_GROUP",
    },
    S: {
        "JoinGroup": "leader, or new metadata: PreparingRebalance; otherwise the current assignment's "
        "join answer",
        "SyncGroup": "the member's assignment at once",
        "Heartbeat": "NONE (session extended)",
        "LeaveGroup": "member removed, PreparingRebalance",
        "OffsetCommit": "accepted from a member of the current generation",
        "OffsetDelete": "deletes offsets of topics no member subscribes to",
        "DeleteGroups": "NON_EMPTY_GROUP",
    },
    D: {
        "JoinGroup": "COORDINATOR_NOT_AVAILABLE",
        "SyncGroup": "COORDINATOR_NOT_AVAILABLE",
        "Heartbeat": "COORDINATOR_NOT_AVAILABLE",
        "LeaveGroup": "COORDINATOR_NOT_AVAILABLE",
        "OffsetCommit": "COORDINATOR_NOT_AVAILABLE",
        "OffsetDelete": "GROUP_ID_NOT_FOUND",
        "DeleteGroups": "GROUP_ID_NOT_FOUND",
    },
}

#: Display order of the states in tables and diagrams.
STATE_ORDER: tuple[GroupState, ...] = (E, P, C, S, D)


def can_transition(source: GroupState, target: GroupState) -> bool:
    return source in VALID_PREVIOUS_STATES[target]


def check_transition(source: GroupState, target: GroupState) -> None:
    """Raise :class:`IllegalStateError` unless ``source -> target`` is in the table."""
    if not can_transition(source, target):
        raise IllegalStateError(f"illegal group state transition {source.value} -> {target.value}")


def check_loaded_state(target: GroupState) -> None:
    """Raise :class:`IllegalStateError` unless a loaded group may start in ``target``."""
    if target not in LOADED_STATES:
        raise IllegalStateError(f"a loaded group cannot start in {target.value}")


def can_rebalance(state: GroupState) -> bool:
    """Kafka's ``canRebalance``: the group may enter PreparingRebalance from here."""
    return can_transition(state, P)
