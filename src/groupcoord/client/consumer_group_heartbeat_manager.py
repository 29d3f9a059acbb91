"""The consumer-protocol member's heartbeat request manager: Kafka's
``ConsumerHeartbeatRequestManager`` with ``AbstractHeartbeatRequestManager``.

It decides when a ConsumerGroupHeartbeat goes (on the broker's interval, at once in JOINING,
ACKNOWLEDGING and LEAVING, never while the member skips heartbeats or has no coordinator), what
it carries (``HeartbeatState``), and what each answer does (the ConsumerGroupHeartbeat rows of
``consumer_group_actions.py``). It also sends the leave heartbeat when ``max.poll.interval.ms``
passed without a poll. The member it serves is a :class:`HeartbeatHost`: as in Java, the request
manager calls the membership manager's transitions and the membership manager owns the state.
"""

from __future__ import annotations

import logging
from typing import Protocol

from groupcoord.client.consumer_group_actions import CgAction, CgApi, action_for
from groupcoord.client.consumer_group_heartbeat import HeartbeatRequestState, HeartbeatState, MemberView
from groupcoord.client.consumer_group_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.client.consumer_group_states import (
    ConsumerGroupMemberState,
    heartbeats_now,
    is_leaving_group,
    skips_heartbeat,
)
from groupcoord.client.errors import FatalGroupError, KafkaClientError
from groupcoord.client.heartbeat import ExponentialBackoff
from groupcoord.client.messages import Node
from groupcoord.errors import ErrorCode

log = logging.getLogger(__name__)

S = ConsumerGroupMemberState

REGEX_RESOLUTION_NOT_SUPPORTED_MSG = "regular expression"
"""Part of the text of an UNSUPPORTED_VERSION that is about a regex on v0 (kept as the error)."""


class HeartbeatHost(Protocol):
    """What the heartbeat request manager needs from the member (Java's membership manager)."""

    state: ConsumerGroupMemberState
    coordinator: Node | None
    member_id: str

    def poll_timer_expired(self, now: int) -> bool: ...
    def view(self) -> MemberView: ...
    def send_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest, now: int, *, ignore_response: bool
    ) -> int: ...
    def on_heartbeat_request_generated(self, now: int) -> None: ...
    def on_heartbeat_request_skipped(self) -> None: ...
    def transition_to_sending_leave_group(self, due_to_expired_poll_timer: bool) -> None: ...
    def on_heartbeat_success(self, response: ConsumerGroupHeartbeatResponse, now: int) -> None: ...
    def on_heartbeat_failure(self) -> None: ...
    def mark_coordinator_unknown(self, now: int) -> None: ...
    def transition_to_fenced(self, now: int) -> None: ...
    def transition_to_fatal(self, error: KafkaClientError, now: int) -> None: ...
    def report(self, error: KafkaClientError) -> None: ...


class HeartbeatRequestManager:
    """When heartbeats go and what their answers do (see the module docstring)."""

    def __init__(self, host: HeartbeatHost, backoff: ExponentialBackoff) -> None:
        self.host = host
        self.fields = HeartbeatState()
        self.timing = HeartbeatRequestState(backoff)

    def poll(self, now: int) -> None:
        """Java ``AbstractHeartbeatRequestManager.poll``."""
        host = self.host
        if host.coordinator is None or skips_heartbeat(host.state):
            host.on_heartbeat_request_skipped()
            return
        if host.poll_timer_expired(now) and not is_leaving_group(host.state):
            log.warning("consumer poll timeout has expired: member %s leaves the group", host.member_id)
            host.transition_to_sending_leave_group(True)
            self._send(now, ignore_response=True)  # the member may rejoin before or after its answer
            self.timing.reset()
            self.fields.reset()
            return
        now_due = host.state is S.LEAVING or (heartbeats_now(host.state) and self.timing.in_flight is None)
        if self.timing.can_send(now) or now_due:
            self._send(now, ignore_response=False)

    def next_deadline(self, now: int) -> int | None:
        if (
            self.host.coordinator is None
            or skips_heartbeat(self.host.state)
            or self.timing.in_flight is not None
        ):
            return None
        if heartbeats_now(self.host.state):
            return now
        return now + self.timing.time_to_next_ms(now)

    def _send(self, now: int, *, ignore_response: bool) -> None:
        request = self.fields.build(self.host.view())
        rid = self.host.send_heartbeat(request, now, ignore_response=ignore_response)
        self.timing.on_send(now, rid)
        self.host.on_heartbeat_request_generated(now)

    def on_response(self, rid: int, r: ConsumerGroupHeartbeatResponse, now: int) -> None:
        if self.timing.in_flight == rid:
            self.timing.in_flight = None
        rule = action_for(CgApi.CONSUMER_GROUP_HEARTBEAT, r.error_code)
        if rule.action is CgAction.SUCCESS:
            self.timing.on_success(now, r.heartbeat_interval_ms)
            self.host.on_heartbeat_success(r, now)
            return
        self.fields.reset()
        self.timing.on_failure(now)
        self.host.on_heartbeat_failure()
        self._apply_error(rule.action, r.error_code, r.error_message, rule.message, now)

    def on_failure(self, rid: int, now: int) -> None:
        """Java ``onFailure``: a transport failure; backoff, full next heartbeat, coordinator unknown."""
        if self.timing.in_flight == rid:
            self.timing.in_flight = None
        self.timing.on_failure(now)
        self.fields.reset()
        self.host.on_heartbeat_failure()
        self.host.mark_coordinator_unknown(now)

    def _apply_error(
        self, action: CgAction, code: ErrorCode, broker_msg: str | None, own_msg: str | None, now: int
    ) -> None:
        host = self.host
        log.info(
            "ConsumerGroupHeartbeat of member %s failed: %s %s", host.member_id, code.name, broker_msg or ""
        )
        if action is CgAction.REDISCOVER:
            host.mark_coordinator_unknown(now)
            self.timing.reset()  # no backoff once the coordinator is found again
        elif action is CgAction.FENCE:
            host.transition_to_fenced(now)
            self.timing.reset()  # the rejoin goes as soon as the partitions are released
        elif action is CgAction.REPORT:
            host.report(KafkaClientError(broker_msg or code.name, code))
        elif action is not CgAction.RETRY:
            text = own_msg or broker_msg or code.name
            if (
                code is ErrorCode.UNSUPPORTED_VERSION
                and broker_msg
                and REGEX_RESOLUTION_NOT_SUPPORTED_MSG in broker_msg
            ):
                text = broker_msg
            if host.state is not S.FATAL:
                host.transition_to_fatal(FatalGroupError(text, code), now)
