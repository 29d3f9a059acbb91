"""What a consumer-protocol heartbeat carries and when it goes (KIP-848 member side).

:class:`HeartbeatState` builds each ConsumerGroupHeartbeat request the way Kafka's
``ConsumerHeartbeatRequestManager.HeartbeatState.buildRequestData`` does: group id, member id,
member epoch and instance id always; in JOINING every other field; otherwise only the fields that
changed since the last request sent (``SentFields``), the owned partitions whenever the local
assignment (partitions and local epoch) changed: that re-send is the acknowledgement. Any error
response or transport failure calls :meth:`HeartbeatState.reset`, so the next heartbeat is full.

:class:`HeartbeatRequestState` is Java's ``HeartbeatRequestState`` (with ``RequestState``): the
interval the broker gave (0 until the first answer), a timer restarted when a request is sent,
one request in flight at most, and exponential backoff after failures.

The local assignment it acknowledges is ``consumer_group_assignment.LocalAssignment``.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.client.consumer_group_assignment import LocalAssignment
from groupcoord.client.consumer_group_messages import ConsumerGroupHeartbeatRequest, TopicIdPartitions
from groupcoord.client.consumer_group_states import ConsumerGroupMemberState
from groupcoord.client.heartbeat import ExponentialBackoff


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberView:
    """What :meth:`HeartbeatState.build` reads from the member at the moment of sending."""

    state: ConsumerGroupMemberState
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    assignment: LocalAssignment


@dataclass(slots=True)
class _SentFields:
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    pattern: str | None = None
    server_assignor: str | None = None
    rack_id: str | None = None
    assignment: LocalAssignment | None = None


class HeartbeatState:
    """Full heartbeats when joining or after a failure, partial ones otherwise."""

    def __init__(self) -> None:
        self._sent = _SentFields()

    def reset(self) -> None:
        self._sent = _SentFields()

    def build(self, m: MemberView) -> ConsumerGroupHeartbeatRequest:
        sent = self._sent
        send_all = m.state is ConsumerGroupMemberState.JOINING
        rebalance_timeout_ms = -1
        if send_all or sent.rebalance_timeout_ms != m.rebalance_timeout_ms:
            rebalance_timeout_ms = sent.rebalance_timeout_ms = m.rebalance_timeout_ms
        names: tuple[str, ...] | None = None
        current_names = tuple(sorted(m.subscribed_topic_names))
        if send_all or sent.subscribed_topic_names != current_names:
            names = sent.subscribed_topic_names = current_names
        regex: str | None = None
        if (send_all and m.subscribed_topic_regex is not None) or sent.pattern != m.subscribed_topic_regex:
            # "" drops a pattern the broker holds (switching from a pattern to names)
            regex = m.subscribed_topic_regex if m.subscribed_topic_regex is not None else ""
            sent.pattern = m.subscribed_topic_regex
        assignor: str | None = None
        if m.server_assignor is not None and (send_all or sent.server_assignor != m.server_assignor):
            assignor = sent.server_assignor = m.server_assignor
        rack: str | None = None
        if m.rack_id is not None and (send_all or sent.rack_id != m.rack_id):
            rack = sent.rack_id = m.rack_id
        owned: tuple[TopicIdPartitions, ...] | None = None
        if send_all or sent.assignment is None or not sent.assignment.same_as(m.assignment):
            owned = m.assignment.wire()
            sent.assignment = m.assignment
        return ConsumerGroupHeartbeatRequest(
            group_id=m.group_id,
            member_id=m.member_id,
            member_epoch=m.member_epoch,
            instance_id=m.instance_id,
            rack_id=rack,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=names,
            subscribed_topic_regex=regex,
            server_assignor=assignor,
            topic_partitions=owned,
        )


class HeartbeatRequestState:
    """Java ``HeartbeatRequestState``: interval timer, in-flight flag, backoff (all absolute ms)."""

    def __init__(self, backoff: ExponentialBackoff) -> None:
        self._backoff = backoff
        self.interval_ms = 0
        """The broker's ``HeartbeatIntervalMs``; 0 before the first answer."""
        self.timer_deadline = 0
        self.in_flight: int | None = None
        self.attempts = 0
        self.backoff_ms = 0
        self.last_received = -1

    def reset(self) -> None:
        """Java ``RequestState.reset``: no backoff, nothing in flight (the timer is kept)."""
        self.in_flight = None
        self.attempts = 0
        self.backoff_ms = 0
        self.last_received = -1

    def remaining_backoff_ms(self, now: int) -> int:
        return max(0, self.backoff_ms - (now - self.last_received))

    def can_send(self, now: int) -> bool:
        """The interval passed, the backoff passed and nothing is in flight."""
        return now >= self.timer_deadline and self.in_flight is None and self.remaining_backoff_ms(now) == 0

    def time_to_next_ms(self, now: int) -> int:
        if now >= self.timer_deadline:
            return self.remaining_backoff_ms(now)
        return self.timer_deadline - now

    def on_send(self, now: int, request_id: int) -> None:
        self.in_flight = request_id
        self.timer_deadline = now + self.interval_ms  # resetTimer: the interval runs from the send

    def on_success(self, now: int, interval_ms: int) -> None:
        self.in_flight = None
        self.last_received = now
        self.backoff_ms = 0
        self.attempts = 0
        if interval_ms != self.interval_ms:  # updateHeartbeatIntervalMs: updateAndReset
            self.interval_ms = interval_ms
            self.timer_deadline = now + interval_ms

    def on_failure(self, now: int) -> None:
        """A failed attempt: the timer is expired at once; the next send waits for the backoff."""
        self.in_flight = None
        self.last_received = now
        self.timer_deadline = now
        self.backoff_ms = self._backoff.backoff(self.attempts)
        self.attempts += 1
