"""The member's state machine (Java ``AbstractCoordinator.MemberState``, seed 002's diagram).

Four states and one transition table. Every state change of the member core goes through
:func:`check_transition`; a change the table does not list is a bug in the core and raises
:class:`IllegalMemberTransition`. ``scripts/gen_client_state_machine.py`` renders the table
as ``docs/client-state-machine.md``.

The heartbeat thread sends only in the states where :func:`heartbeats_enabled_in` is true:
COMPLETING_REBALANCE (the JoinGroup response arrived: the coordinator already expects
heartbeats) and STABLE. In UNJOINED and PREPARING_REBALANCE it disables itself.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from groupcoord.client.messages import NO_GENERATION_ID


class MemberState(enum.Enum):
    UNJOINED = "UNJOINED"
    """Not in a group: the initial state, and after a reset (errors, leaving)."""
    PREPARING_REBALANCE = "PREPARING_REBALANCE"
    """A JoinGroup has been sent and its response has not arrived."""
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"
    """The JoinGroup response arrived; waiting for the SyncGroup response (the assignment)."""
    STABLE = "STABLE"
    """Joined and synced; heartbeating."""


STATE_ORDER: tuple[MemberState, ...] = (
    MemberState.UNJOINED,
    MemberState.PREPARING_REBALANCE,
    MemberState.COMPLETING_REBALANCE,
    MemberState.STABLE,
)

U, P, C, S = STATE_ORDER

TRANSITIONS: dict[tuple[MemberState, MemberState], str] = {
    (U, P): "initiate_join_group: the first JoinGroup is sent",
    (
        P,
        P,
    ): "initiate_join_group: JoinGroup re-sent (MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, retriable error)",
    (C, P): "initiate_join_group: rejoin after SyncGroup failed (REBALANCE_IN_PROGRESS, coordinator error)",
    (S, P): "initiate_join_group: rejoin requested (heartbeat/commit REBALANCE_IN_PROGRESS, cooperative "
    "revocation, subscription or metadata change)",
    (P, C): "JoinGroup response NONE: new generation installed, heartbeat thread enabled",
    (C, S): "SyncGroup response NONE for the current generation: assignment received",
    (U, U): "reset while not joined (e.g. leave before any join)",
    (P, U): "reset: JoinGroup UNKNOWN_MEMBER_ID, maybe_leave_group (poll timeout, unsubscribe, close)",
    (C, U): "reset: SyncGroup/Heartbeat UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION, maybe_leave_group",
    (S, U): "reset: Heartbeat/OffsetCommit UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION, maybe_leave_group",
}
"""(from, to) -> what causes it. Anything else is illegal."""


class IllegalMemberTransition(RuntimeError):
    """The member core tried a transition the table does not allow (a bug in the core)."""


def check_transition(current: MemberState, target: MemberState) -> None:
    if (current, target) not in TRANSITIONS:
        raise IllegalMemberTransition(f"member state {current.value} -> {target.value} is not allowed")


def has_not_joined_group(state: MemberState) -> bool:
    """Java ``MemberState.hasNotJoinedGroup``: UNJOINED or PREPARING_REBALANCE."""
    return state in (MemberState.UNJOINED, MemberState.PREPARING_REBALANCE)


def rebalance_in_progress(state: MemberState) -> bool:
    """Java ``AbstractCoordinator.rebalanceInProgress``: PREPARING or COMPLETING_REBALANCE."""
    return state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)


def heartbeats_enabled_in(state: MemberState) -> bool:
    """The states in which the heartbeat thread sends: COMPLETING_REBALANCE and STABLE."""
    return not has_not_joined_group(state)


@dataclass(frozen=True, kw_only=True, slots=True)
class Generation:
    """Java ``AbstractCoordinator.Generation``; NO_GENERATION is (-1, "", None)."""

    generation_id: int
    member_id: str
    protocol_name: str | None

    def has_member_id(self) -> bool:
        return self.member_id != ""


NO_GENERATION = Generation(generation_id=NO_GENERATION_ID, member_id="", protocol_name=None)
