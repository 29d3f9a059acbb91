"""The consumer-protocol member's state machine (KIP-848; Java ``MemberState`` of the new consumer).

Ten states and one transition table, as Kafka's ``MemberState`` declares them (each state's
``previousValidStates``). Every state change of
:class:`~groupcoord.client.consumer_group_member.ConsumerGroupMember` goes through
:func:`check_transition`; a change the table does not list is a bug in the core and raises
:class:`IllegalConsumerGroupTransition`. A state may always "move" to itself (Java
``transitionTo`` accepts ``state == nextState``). ``scripts/gen_consumer_group_state_machine.py``
renders the table as ``docs/consumer-group-client-state-machine.md``.

Which states heartbeat (Java ``AbstractMembershipManager``): none in UNSUBSCRIBED, FATAL, STALE
and FENCED (``shouldSkipHeartbeat``); at once, without waiting for the interval, in JOINING,
ACKNOWLEDGING and LEAVING (``shouldHeartbeatNow``); on the interval the broker gives otherwise.
"""

from __future__ import annotations

import enum


class ConsumerGroupMemberState(enum.Enum):
    UNSUBSCRIBED = "UNSUBSCRIBED"
    """Not subscribed (never, or after leaving): no heartbeats; offsets can still be committed."""
    JOINING = "JOINING"
    """Heartbeats with epoch 0 and every field, at once, until an epoch > 0 comes back."""
    RECONCILING = "RECONCILING"
    """A target assignment differs from the owned one: commit, revoke, assign."""
    ACKNOWLEDGING = "ACKNOWLEDGING"
    """Reconciled: the next heartbeat, sent at once, carries the new owned partitions."""
    STABLE = "STABLE"
    """The owned partitions equal the last target; heartbeats on the interval."""
    FENCED = "FENCED"
    """FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: partitions lost, then JOINING with epoch 0."""
    PREPARE_LEAVING = "PREPARE_LEAVING"
    """Releasing the partitions (callbacks) before the leave heartbeat."""
    LEAVING = "LEAVING"
    """The next heartbeat, sent at once, carries the leave epoch (-1, or -2 for a static member)."""
    FATAL = "FATAL"
    """An unrecoverable error: no more requests."""
    STALE = "STALE"
    """Left because ``max.poll.interval.ms`` passed; rejoins on the next application poll."""


S = ConsumerGroupMemberState

STATE_ORDER: tuple[ConsumerGroupMemberState, ...] = (
    S.UNSUBSCRIBED,
    S.JOINING,
    S.RECONCILING,
    S.ACKNOWLEDGING,
    S.STABLE,
    S.FENCED,
    S.PREPARE_LEAVING,
    S.LEAVING,
    S.FATAL,
    S.STALE,
)

TRANSITIONS: dict[tuple[ConsumerGroupMemberState, ConsumerGroupMemberState], str] = {
    # JOINING: FENCED, UNSUBSCRIBED, STALE
    (S.UNSUBSCRIBED, S.JOINING): "the first poll after subscribe (onConsumerPoll)",
    (S.FENCED, S.JOINING): "on_lost completed after fencing: rejoin with epoch 0, same member id",
    (S.STALE, S.JOINING): "the application polled again after a poll-timeout leave (maybeRejoinStaleMember)",
    # RECONCILING: STABLE, JOINING, ACKNOWLEDGING, RECONCILING
    (S.JOINING, S.RECONCILING): "the join response carries an assignment different from the owned one",
    (S.STABLE, S.RECONCILING): "a heartbeat response carries a new target assignment",
    (S.ACKNOWLEDGING, S.RECONCILING): "the ack was sent but more of the target is left to reconcile",
    (S.RECONCILING, S.RECONCILING): "a newer target arrives while reconciling",
    # ACKNOWLEDGING: RECONCILING
    (S.RECONCILING, S.ACKNOWLEDGING): "commit, on_revoke and on_assign completed (or only the unresolved "
    "rest of the target is left): ack with the next heartbeat",
    # STABLE: JOINING, ACKNOWLEDGING, RECONCILING
    (S.JOINING, S.STABLE): "the join response's assignment equals the owned one (e.g. empty)",
    (S.ACKNOWLEDGING, S.STABLE): "the ack heartbeat was sent and nothing is left to reconcile",
    (S.RECONCILING, S.STABLE): "a new target equal to the owned partitions arrives",
    # FENCED: JOINING, STABLE, RECONCILING, ACKNOWLEDGING, PREPARE_LEAVING, LEAVING
    (S.JOINING, S.FENCED): "FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID",
    (S.STABLE, S.FENCED): "FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID",
    (S.RECONCILING, S.FENCED): "FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID (the reconciliation is dropped)",
    (S.ACKNOWLEDGING, S.FENCED): "FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID",
    (S.PREPARE_LEAVING, S.FENCED): "(allowed by Kafka's table; a fenced leaving member goes to UNSUBSCRIBED)",
    (S.LEAVING, S.FENCED): "(allowed by Kafka's table; a fenced leaving member goes to UNSUBSCRIBED)",
    # PREPARE_LEAVING: JOINING, STABLE, RECONCILING, ACKNOWLEDGING, UNSUBSCRIBED
    (S.JOINING, S.PREPARE_LEAVING): "close/unsubscribe, or the poll timer expired",
    (S.STABLE, S.PREPARE_LEAVING): "close/unsubscribe, or the poll timer expired",
    (S.RECONCILING, S.PREPARE_LEAVING): "close/unsubscribe, or the poll timer expired",
    (S.ACKNOWLEDGING, S.PREPARE_LEAVING): "close/unsubscribe, or the poll timer expired",
    (S.UNSUBSCRIBED, S.PREPARE_LEAVING): "(allowed by Kafka's table)",
    # LEAVING: PREPARE_LEAVING
    (S.PREPARE_LEAVING, S.LEAVING): "partitions released: leave epoch set, the leave heartbeat next",
    # UNSUBSCRIBED: PREPARE_LEAVING, LEAVING, FENCED
    (S.PREPARE_LEAVING, S.UNSUBSCRIBED): "(allowed by Kafka's table)",
    (S.LEAVING, S.UNSUBSCRIBED): "the leave heartbeat was sent (or could not be: no coordinator), or the "
    "member was fenced before sending it",
    (S.FENCED, S.UNSUBSCRIBED): "unsubscribe/close while fenced",
    # STALE: LEAVING
    (S.LEAVING, S.STALE): "the poll-timeout leave heartbeat was sent: on_lost, assignment cleared",
    # FATAL: JOINING, STABLE, RECONCILING, ACKNOWLEDGING, PREPARE_LEAVING, LEAVING, UNSUBSCRIBED
    (S.JOINING, S.FATAL): "a fatal heartbeat error (table in consumer_group_actions.py)",
    (S.STABLE, S.FATAL): "a fatal heartbeat error",
    (S.RECONCILING, S.FATAL): "a fatal heartbeat error",
    (S.ACKNOWLEDGING, S.FATAL): "a fatal heartbeat error",
    (S.PREPARE_LEAVING, S.FATAL): "a fatal heartbeat error (the leave is dropped)",
    (S.LEAVING, S.FATAL): "a fatal heartbeat error (the leave is dropped)",
    (S.UNSUBSCRIBED, S.FATAL): "a fatal error after leaving",
}
"""(from, to) -> what causes it; Kafka's ``MemberState`` table. Anything else is illegal."""


class IllegalConsumerGroupTransition(RuntimeError):
    """The member core tried a transition the table does not allow (a bug in the core)."""


def check_transition(current: ConsumerGroupMemberState, target: ConsumerGroupMemberState) -> None:
    if current is not target and (current, target) not in TRANSITIONS:
        raise IllegalConsumerGroupTransition(f"member state {current.value} -> {target.value} is not allowed")


def skips_heartbeat(state: ConsumerGroupMemberState) -> bool:
    """Java ``shouldSkipHeartbeat``: not an active member of the group."""
    return state in (S.UNSUBSCRIBED, S.FATAL, S.STALE, S.FENCED)


def heartbeats_now(state: ConsumerGroupMemberState) -> bool:
    """Java ``shouldHeartbeatNow``: send without waiting for the interval."""
    return state in (S.ACKNOWLEDGING, S.LEAVING, S.JOINING)


def can_handle_new_assignment(state: ConsumerGroupMemberState) -> bool:
    """Java ``MemberState.canHandleNewAssignment``: the states RECONCILING may be entered from."""
    return (state, S.RECONCILING) in TRANSITIONS or state is S.RECONCILING


def is_not_in_group(state: ConsumerGroupMemberState) -> bool:
    """Java ``isNotInGroup``."""
    return state in (S.UNSUBSCRIBED, S.FENCED, S.FATAL, S.STALE)


def is_leaving_group(state: ConsumerGroupMemberState) -> bool:
    """Java ``isLeavingGroup``."""
    return state in (S.PREPARE_LEAVING, S.LEAVING)
