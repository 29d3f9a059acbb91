"""The sans-I/O group member: the client's ``AbstractCoordinator`` (seeds 002 and 004).

:class:`AbstractCoordinator` owns everything a member of a classic group does for any protocol
type: coordinator discovery (``ensure_coordinator_ready``), the two-step join
(``join_group_if_needed``), sync, the heartbeat "thread" (``HeartbeatThread`` logic with its
``enabled`` flag, ``send_heartbeat_request``), the session and poll timeouts, leaving
(``maybe_leave_group``), the error -> action table of ``actions.py`` and retry backoff. It does
no I/O and reads no clock: every call takes ``now_ms``; it returns the requests to send.
Subclasses supply the protocol (``ConsumerCoordinator`` in ``consumer_core.py``; a
``GroupMember`` for custom protocol types overrides the same hooks).

The driving contract
====================

An adapter (blocking ``Consumer``, asyncio ``AsyncConsumer``, ``GroupMember``, the simulator)
owns the sockets and the clock and drives the core with these calls. The core is **not**
thread-safe: an adapter that calls it from two threads (application + heartbeat thread) holds
one lock around every call (Java synchronises on the coordinator object the same way).

``poll(now_ms) -> list[Outbound]``
    The application polled (Java ``ConsumerCoordinator.poll`` / ``pollHeartbeat``). Resets the
    ``max.poll.interval.ms`` timer, surfaces a failure of the heartbeat thread (as a
    :class:`FatalErrorEvent`), looks the coordinator up, (re)joins when needed, runs
    auto-commit, and returns every request to send now. Call it on each application poll and
    again after delivering events (a JoinGroup is held back until the revocation events of
    the join's preparation have been drained with :meth:`events`).
``heartbeat_poll(now_ms) -> list[Outbound]``
    One turn of the heartbeat thread's loop (Java ``HeartbeatThread.run``). Empty unless
    :attr:`enabled`. In order: coordinator unknown -> FindCoordinator (after backoff);
    ``session.timeout.ms`` without a successful heartbeat -> coordinator marked unknown;
    ``max.poll.interval.ms`` without :meth:`poll` -> ``maybe_leave_group("consumer poll timeout
    has expired.")``; heartbeat due -> a :class:`HeartbeatRequest`. Never starts a join.
``pending(now_ms) -> list[Outbound]``
    Requests that are ready without being an application poll: a commit or offset fetch
    waiting for the coordinator, coordinator lookup they need, the leave of ``close``. It
    neither resets the poll timer nor starts a join (use it while waiting for a synchronous
    commit or for :meth:`close` to finish).
``on_response(request_id, response, now_ms) -> None``
    The answer to an :class:`Outbound` (a :mod:`messages` response). Unknown or already
    expired ids are ignored (late answers after a timeout or a coordinator change).
``on_failure(request_id, now_ms) -> None``
    The request could not be sent, its connection broke, or the adapter timed it out. For a
    request to the coordinator this marks the coordinator unknown (Java
    ``CoordinatorResponseHandler.onFailure`` on a ``DisconnectException``). The core also
    times requests out itself at ``Outbound.timeout_ms`` after the send (it treats that as
    ``on_failure``), so an adapter need not.
``next_deadline_ms() -> int | None``
    The earliest time at which :meth:`poll`, :meth:`heartbeat_poll` or :meth:`pending` has
    something new to do (heartbeat due, session/poll timeout, backoff over, auto-commit due,
    a request's timeout); ``None`` when only a response or an application call can change
    anything. The heartbeat thread sleeps until ``min(next_heartbeat_deadline_ms(),
    response)``; :meth:`next_heartbeat_deadline_ms` is the part that concerns it.
``events() -> list[MemberEvent]``
    Drains what the application must see, oldest first, to be delivered on the application's
    thread: :class:`FatalErrorEvent`, and (consumer core) partitions revoked / assigned /
    lost, commit results, starting positions.

Leaving: ``maybe_leave_group(reason, now_ms)`` (LeaveGroup from dynamic members only, then
UNJOINED; the next :meth:`poll` rejoins) and ``close_member(now_ms)`` (``on_leave_prepare``,
then ``maybe_leave_group``; sets :attr:`closing` so the member never rejoins). Subclasses'
events are appended to ``self._events`` and drained by :meth:`events` in order.

Requests to the coordinator carry ``Outbound.node`` = the coordinator's :class:`Node`
(Java connects to it under a separate connection id, ``Integer.MAX_VALUE - node_id``; an
adapter may do the same). ``node`` ``None`` means "any broker", the least-loaded one
(FindCoordinator, Metadata). A change of coordinator is visible as a new ``node``; the
adapter may close the old connection.

:class:`AbstractCoordinator` is one class, as Java's is: discovery, join, sync, heartbeat,
leave and dispatch read and write the same state (generation, coordinator, timers) and call each
other; split across mixins they would only reach into each other's attributes. What stands
alone lives beside it: the requests and their deadlines in ``outbox.py``, the events in
``events.py``, the timers in ``heartbeat.py``, the states and ``Generation`` in ``states.py``,
the error actions in ``actions.py``, ``RebalanceConfig`` in ``config.py``.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence

from groupcoord.client.actions import Action, Api, Rule, action_for
from groupcoord.client.config import RebalanceConfig
from groupcoord.client.errors import FatalGroupError, KafkaClientError
from groupcoord.client.events import FatalErrorEvent, MemberEvent
from groupcoord.client.heartbeat import ExponentialBackoff, HeartbeatTimers
from groupcoord.client.messages import (
    NO_GENERATION_ID,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    Node,
    Request,
    Response,
    SyncGroupRequest,
    SyncGroupResponse,
    failure_response,
)
from groupcoord.client.outbox import InFlightRequest, Outbound, Outbox
from groupcoord.client.states import (
    NO_GENERATION,
    Generation,
    MemberState,
    check_transition,
    has_not_joined_group,
    rebalance_in_progress,
)
from groupcoord.errors import ErrorCode

log = logging.getLogger(__name__)

JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000
"""A JoinGroup may be parked for the rebalance timeout; its request timeout is that plus 5 s
(Java ``AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE``)."""
MAX_REASON_LENGTH = 255
"""Java ``JoinGroupRequest.maybeTruncateReason`` / ``LeaveGroupRequest`` limit."""


class AbstractCoordinator:
    """The generic member (see the module docstring for the driving contract).

    Subclasses implement the hooks ``protocol_type``, ``metadata``, ``on_join_prepare``,
    ``perform_assignment``, ``on_join_complete`` and may override ``on_leave_prepare``,
    ``group_active``, ``on_poll``, ``on_pending``, ``subclass_deadline`` and
    ``on_subclass_response`` (the consumer core uses the last ones for commits and fetches).
    """

    def __init__(self, config: RebalanceConfig, *, rng: random.Random | None = None) -> None:
        if config.heartbeat_interval_ms >= config.session_timeout_ms:
            raise ValueError("heartbeat interval must be lower than the session timeout")
        self.rebalance_config = config
        self._rng = rng or random.Random(0)
        self.retry_backoff = ExponentialBackoff(
            config.retry_backoff_ms, config.retry_backoff_max_ms, self._rng
        )
        self.heartbeat = HeartbeatTimers(
            interval_ms=config.heartbeat_interval_ms,
            session_ms=config.session_timeout_ms,
            poll_ms=config.rebalance_timeout_ms,
            backoff=self.retry_backoff,
        )
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        self.coordinator: Node | None = None
        self.rejoin_needed = True
        self.rejoin_reason = ""
        self.needs_join_prepare = True
        self.enabled = False
        """The heartbeat thread's flag (seed 002): True from the JoinGroup response on."""
        self.heartbeat_failed: KafkaClientError | None = None
        self.fatal_error: KafkaClientError | None = None
        self.closing = False
        """Set by :meth:`close_member`: the member never (re)joins again."""
        self.hold_join = False
        """Set by subclasses while revocation events wait to be drained: no JoinGroup until then."""
        self._requests = Outbox()
        self._events: list[MemberEvent] = []
        self._join_request: int | None = None
        self._sync_request: int | None = None
        self._find_request: int | None = None
        self._find_attempts = 0
        self._find_not_before = 0
        self._join_not_before = 0
        self._join_attempts = 0
        self._pending_leader: JoinGroupResponse | None = None
        self._now = 0

    # ================================================================== driving contract
    def poll(self, now_ms: int) -> list[Outbound]:
        """See the module docstring: the application polled."""
        self._tick(now_ms)
        self.heartbeat.poll(now_ms)  # Java pollHeartbeat: reset the max.poll.interval timer
        if self.heartbeat_failed is not None and self.fatal_error is None:
            self._fatal(self.heartbeat_failed)
        if self.fatal_error is None:
            self.on_poll(now_ms)
            if self.group_active() and not self.closing:
                if self.ensure_coordinator_ready(now_ms):
                    self._maybe_complete_leader(now_ms)
                    if self.rejoin_needed_or_pending():
                        self.join_group_if_needed(now_ms)
            elif self.coordinator is None and self.needs_coordinator():
                self.lookup_coordinator(now_ms)  # commits of a manually assigned consumer
            self.on_pending(now_ms)
        return self._drain()

    def heartbeat_poll(self, now_ms: int) -> list[Outbound]:
        """One turn of ``HeartbeatThread.run`` (see the module docstring)."""
        self._tick(now_ms)
        if not self.enabled or self.fatal_error is not None:
            return self._drain_only_heartbeat_thread()
        if has_not_joined_group(self.state) or self.heartbeat_failed is not None:
            self.enabled = False  # HeartbeatThread disables itself
            return self._drain_only_heartbeat_thread()
        if self.coordinator is None:
            self.lookup_coordinator(now_ms)
        elif now_ms >= self.heartbeat.session_deadline:
            self.mark_coordinator_unknown("session timed out without receiving a heartbeat response", now_ms)
        elif now_ms >= self.heartbeat.poll_deadline:
            log.warning(
                "consumer poll timeout has expired: the time between subsequent calls to poll() was "
                "longer than max.poll.interval.ms (%d); member %s of group %s leaves",
                self.rebalance_config.rebalance_timeout_ms,
                self.generation.member_id,
                self.rebalance_config.group_id,
            )
            self.maybe_leave_group("consumer poll timeout has expired.", now_ms)
        elif self.heartbeat.should_heartbeat(now_ms):  # as Java: even if the last one is unanswered
            self.send_heartbeat_request(now_ms)
        return self._drain_only_heartbeat_thread()

    def pending(self, now_ms: int) -> list[Outbound]:
        """Requests ready without an application poll (commits, fetches, leave, lookups)."""
        self._tick(now_ms)
        if self.fatal_error is None:
            if self.coordinator is None and self.needs_coordinator():
                self.lookup_coordinator(now_ms)
            self._maybe_complete_leader(now_ms)
            self.on_pending(now_ms)
        return self._drain()

    def on_response(self, request_id: int, response: Response, now_ms: int) -> None:
        self._tick(now_ms, expire=False)
        inflight = self._requests.pop(request_id)
        if inflight is None:
            log.debug("ignoring the answer to request %d (expired or superseded)", request_id)
            return
        self._dispatch(request_id, inflight, response, now_ms)

    def on_failure(self, request_id: int, now_ms: int) -> None:
        self._tick(now_ms, expire=False)
        inflight = self._requests.pop(request_id)
        if inflight is None:
            return
        self._fail(request_id, inflight, now_ms)

    def next_deadline_ms(self) -> int | None:
        if self._requests.ready or self._requests.immediate:
            return self._now
        candidates: list[int] = self._requests.deadlines()
        hb = self.next_heartbeat_deadline_ms()
        if hb is not None:
            candidates.append(hb)
        if self.fatal_error is None:
            if (
                self.coordinator is None
                and self._find_request is None
                and (self.group_active() or self.needs_coordinator())
            ):
                candidates.append(self._find_not_before)
            if (
                self.coordinator is not None
                and self.group_active()
                and not self.closing
                and self.rejoin_needed_or_pending()
                and self._join_request is None
                and self._sync_request is None
                and not self.hold_join
            ):
                candidates.append(self._join_not_before)
            sub = self.subclass_deadline()
            if sub is not None:
                candidates.append(sub)
        return min(candidates) if candidates else None

    def next_heartbeat_deadline_ms(self) -> int | None:
        """When :meth:`heartbeat_poll` next has work (None while the thread is disabled)."""
        if not self.enabled or self.fatal_error is not None:
            return None
        if has_not_joined_group(self.state) or self.heartbeat_failed is not None:
            return self._now  # it will disable itself
        if self.coordinator is None:
            return self._find_not_before if self._find_request is None else None
        return min(
            self.heartbeat.session_deadline, self.heartbeat.poll_deadline, self.heartbeat.next_heartbeat
        )

    def events(self) -> list[MemberEvent]:
        out, self._events = self._events, []
        self.hold_join = False
        return out

    # ================================================================== hooks
    def protocol_type(self) -> str:
        raise NotImplementedError

    def metadata(self) -> Sequence[tuple[str, bytes]]:
        """(protocol name, metadata) in preference order, for JoinGroup."""
        raise NotImplementedError

    def on_join_prepare(self, now_ms: int, generation_id: int, member_id: str) -> bool:
        """Before a JoinGroup: False = not ready yet (called again on the next poll)."""
        return True

    def perform_assignment(
        self,
        leader_id: str,
        protocol: str,
        members: Sequence[JoinGroupResponseMember],
        skip_assignment: bool,
        now_ms: int,
    ) -> Mapping[str, bytes] | None:
        """The leader's assignment (member id -> bytes); None = not ready (e.g. waiting for
        metadata), asked again on the next poll/pending/response."""
        raise NotImplementedError

    def on_join_complete(
        self, generation_id: int, member_id: str, protocol: str | None, assignment: bytes, now_ms: int
    ) -> None:
        raise NotImplementedError

    def on_leave_prepare(self, now_ms: int) -> None:
        """Before leaving the group (unsubscribe, close)."""

    def group_active(self) -> bool:
        """Whether the member should be in the group (the consumer: subscribed, not manual)."""
        return True

    def needs_coordinator(self) -> bool:
        """Whether something other than membership needs the coordinator (commits)."""
        return False

    def on_poll(self, now_ms: int) -> None:
        """Subclass work at the start of every application poll."""

    def on_pending(self, now_ms: int) -> None:
        """Subclass work that needs no application poll (send queued commits ...)."""

    def subclass_deadline(self) -> int | None:
        return None

    def on_subclass_response(
        self, request_id: int, tag: object, request: Request, response: Response | None, now_ms: int
    ) -> None:
        """Answer (``response``) or failure (None) of a request sent with :meth:`send` by a subclass."""

    # ================================================================== state
    def _transition(self, target: MemberState) -> None:
        check_transition(self.state, target)
        if target is not self.state:
            log.debug("group %s member state %s -> %s", self.rebalance_config.group_id, self.state, target)
        self.state = target

    def coordinator_unknown(self) -> bool:
        return self.coordinator is None

    def rejoin_needed_or_pending(self) -> bool:
        return self.rejoin_needed or self._join_request is not None or self._sync_request is not None

    def generation_if_stable(self) -> Generation | None:
        return self.generation if self.state is MemberState.STABLE else None

    def rebalance_in_progress(self) -> bool:
        return rebalance_in_progress(self.state)

    def is_dynamic_member(self) -> bool:
        return self.rebalance_config.group_instance_id is None

    def has_generation_reset(self, gen: Generation) -> bool:
        return gen.generation_id == NO_GENERATION_ID and gen.protocol_name is None

    def request_rejoin(self, reason: str) -> None:
        self.rejoin_reason = reason
        self.rejoin_needed = True
        self._requests.immediate = True

    def reset_state_and_generation(self, reason: str, reset_member_id: bool) -> None:
        log.info("group %s: resetting generation (%s)", self.rebalance_config.group_id, reason)
        self._transition(MemberState.UNJOINED)
        if reset_member_id:
            self.generation = NO_GENERATION
        else:
            self.generation = Generation(
                generation_id=NO_GENERATION_ID, member_id=self.generation.member_id, protocol_name=None
            )

    def reset_state_and_rejoin(self, reason: str, reset_member_id: bool) -> None:
        self.reset_state_and_generation(reason, reset_member_id)
        self.request_rejoin(reason)
        self.needs_join_prepare = True

    def _fatal(self, error: KafkaClientError) -> None:
        if self.fatal_error is None:
            log.error("group %s: fatal error: %s", self.rebalance_config.group_id, error)
            self.fatal_error = error
            self.enabled = False
            self._events.append(FatalErrorEvent(error=error, fatal=True))

    def _report(self, error: KafkaClientError) -> None:
        log.warning("group %s: %s", self.rebalance_config.group_id, error)
        self._events.append(FatalErrorEvent(error=error, fatal=False))

    # ================================================================== sending
    def send(
        self,
        request: Request,
        now_ms: int,
        *,
        api: Api | None,
        to_coordinator: bool = True,
        timeout_ms: int | None = None,
        tag: object = None,
    ) -> int:
        t = self.rebalance_config.request_timeout_ms if timeout_ms is None else timeout_ms
        entry = InFlightRequest(
            api=api,
            request=request,
            sent_generation=self.generation,
            deadline=now_ms + t,
            to_coordinator=to_coordinator,
            tag=tag,
        )
        # to an unknown coordinator: doomed, it fails on the next turn (outbox.py)
        return self._requests.add(entry, self.coordinator if to_coordinator else None, t)

    def _drain(self) -> list[Outbound]:
        return self._requests.drain()

    def _drain_only_heartbeat_thread(self) -> list[Outbound]:
        return self._requests.drain(keep_immediate=True)

    def _tick(self, now_ms: int, *, expire: bool = True) -> None:
        if now_ms > self._now:
            self._now = now_ms
        while (doomed := self._requests.pop_doomed()) is not None:
            self._fail(doomed[0], doomed[1], now_ms)
        if expire:
            for rid in self._requests.expired(now_ms):
                inflight = self._requests.pop(rid)
                if inflight is not None:
                    log.debug("request %d (%s) timed out", rid, type(inflight.request).__name__)
                    self._fail(rid, inflight, now_ms)

    # ================================================================== coordinator discovery
    def ensure_coordinator_ready(self, now_ms: int) -> bool:
        """Java ``ensureCoordinatorReady`` (one non-blocking step): True when the coordinator is known."""
        if self.coordinator is not None:
            return True
        self.lookup_coordinator(now_ms)
        return False

    def lookup_coordinator(self, now_ms: int) -> None:
        """FindCoordinator(key = group id) to the least-loaded broker; one lookup in flight."""
        if self._find_request is not None or now_ms < self._find_not_before:
            return
        self._find_request = self.send(
            FindCoordinatorRequest(key=self.rebalance_config.group_id),
            now_ms,
            api=Api.FIND_COORDINATOR,
            to_coordinator=False,
        )

    def mark_coordinator_unknown(self, reason: str, now_ms: int) -> None:
        """Forget the coordinator; every request in flight to it fails (Java disconnects it)."""
        if self.coordinator is None:
            return
        log.info(
            "group %s: coordinator %s unknown: %s", self.rebalance_config.group_id, self.coordinator, reason
        )
        self.coordinator = None
        for rid in self._requests.to_coordinator():
            inflight = self._requests.pop(rid)
            if inflight is not None:
                self._fail(rid, inflight, now_ms)

    def _handle_find_coordinator(self, resp: FindCoordinatorResponse, now_ms: int) -> None:
        self._find_request = None
        rule = action_for(Api.FIND_COORDINATOR, resp.error)
        if rule.action is Action.SUCCESS and resp.node is not None:
            self.coordinator = resp.node
            self._find_attempts = 0
            self.heartbeat.reset_session_timeout(now_ms)
            self._requests.immediate = True
            log.info("group %s: discovered coordinator %s", self.rebalance_config.group_id, resp.node)
            return
        if rule.action is Action.FATAL:
            self._fatal(FatalGroupError(f"FindCoordinator failed: {resp.error.name}", resp.error))
            return
        if rule.report:
            self._report(KafkaClientError(f"FindCoordinator failed: {resp.error.name}", resp.error))
        self._find_not_before = now_ms + self.retry_backoff.backoff(self._find_attempts)
        self._find_attempts += 1

    # ================================================================== join
    def join_group_if_needed(self, now_ms: int) -> None:
        """Java ``joinGroupIfNeeded``, one non-blocking step: prepare, then send JoinGroup."""
        if self._join_request is not None or self._sync_request is not None or self._pending_leader:
            return
        if now_ms < self._join_not_before:
            return
        if self.needs_join_prepare:
            if not self.on_join_prepare(now_ms, self.generation.generation_id, self.generation.member_id):
                return
            self.needs_join_prepare = False
        if self.hold_join:
            return
        self.initiate_join_group(now_ms)

    def initiate_join_group(self, now_ms: int) -> None:
        self._transition(MemberState.PREPARING_REBALANCE)
        self.send_join_group_request(now_ms)

    def send_join_group_request(self, now_ms: int) -> None:
        cfg = self.rebalance_config
        reason = self.rejoin_reason[:MAX_REASON_LENGTH] or None
        req = JoinGroupRequest(
            group_id=cfg.group_id,
            session_timeout_ms=cfg.session_timeout_ms,
            rebalance_timeout_ms=cfg.rebalance_timeout_ms,
            member_id=self.generation.member_id,
            group_instance_id=cfg.group_instance_id,
            protocol_type=self.protocol_type(),
            protocols=tuple(self.metadata()),
            reason=reason,
        )
        timeout = max(cfg.request_timeout_ms, cfg.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
        self._join_request = self.send(req, now_ms, api=Api.JOIN_GROUP, timeout_ms=timeout)

    def _join_failed(
        self, rule: Rule, code: ErrorCode, sent: Generation, resp: JoinGroupResponse, now_ms: int
    ) -> None:
        a = rule.action if sent == self.generation or rule.if_stale is None else rule.if_stale
        if a is Action.REJOIN_WITH_MEMBER_ID:
            self.generation = Generation(
                generation_id=NO_GENERATION_ID, member_id=resp.member_id, protocol_name=None
            )
            self.request_rejoin(f"need to re-join with the given member-id: {resp.member_id}")
        else:
            self._rebalance_failed("JoinGroup", a, rule, code, now_ms)

    def _rebalance_failed(self, api: str, a: Action, rule: Rule, code: ErrorCode, now_ms: int) -> None:
        """A JoinGroup or SyncGroup error's action ``a`` (the rule's, or its stale variant)."""
        if a is Action.REJOIN:
            self.request_rejoin(f"rebalance failed due to {code.name}")
        elif a is Action.RESET_AND_REJOIN:
            self.reset_state_and_rejoin(
                f"encountered {code.name} from {api} response", not rule.keep_member_id
            )
        elif a in (Action.REDISCOVER, Action.RETRY):
            if a is Action.REDISCOVER:
                self.mark_coordinator_unknown(f"{api}: {code.name}", now_ms)
            self.request_rejoin(f"rebalance failed due to {code.name}")
            self._join_not_before = now_ms + self.rebalance_config.retry_backoff_ms
        else:
            self._fatal(FatalGroupError(f"{api} failed: {code.name}", code))

    def _handle_join_group(self, inflight: InFlightRequest, resp: JoinGroupResponse, now_ms: int) -> None:
        self._join_request = None
        rule = action_for(Api.JOIN_GROUP, resp.error)
        if rule.action is not Action.SUCCESS:
            self._join_failed(rule, resp.error, inflight.sent_generation, resp, now_ms)
            return
        if resp.protocol_type is not None and resp.protocol_type != self.protocol_type():
            self._fatal(
                FatalGroupError(
                    f"JoinGroup response protocol type {resp.protocol_type!r} "
                    f"is not {self.protocol_type()!r}",
                    ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                )
            )
            return
        if self.state is not MemberState.PREPARING_REBALANCE:
            # the member left (or was reset) while the join was in flight: UnjoinedGroupException
            self.request_rejoin("the member left while its JoinGroup was in flight")
            return
        self.generation = Generation(
            generation_id=resp.generation_id, member_id=resp.member_id, protocol_name=resp.protocol_name
        )
        self._transition(MemberState.COMPLETING_REBALANCE)
        self._enable_heartbeat(now_ms)
        if resp.leader == resp.member_id:
            self._pending_leader = resp
            self._maybe_complete_leader(now_ms)
        else:
            self.on_join_follower(now_ms)

    def _enable_heartbeat(self, now_ms: int) -> None:
        """HeartbeatThread.enable(): the only call site is the JoinGroup response."""
        self.enabled = True
        self.heartbeat.reset_timeouts(now_ms)
        self.heartbeat.in_flight = None

    def _maybe_complete_leader(self, now_ms: int) -> None:
        resp = self._pending_leader
        if resp is None:
            return
        if (
            self.state is not MemberState.COMPLETING_REBALANCE
            or self.generation.generation_id != resp.generation_id
        ):
            self._pending_leader = None
            return
        try:
            assignments = self.perform_assignment(
                resp.leader, resp.protocol_name or "", resp.members, resp.skip_assignment, now_ms
            )
        except KafkaClientError as e:
            self._pending_leader = None
            self._report(e)
            self.request_rejoin(f"assignment failed: {e}")
            self._join_not_before = now_ms + self.rebalance_config.retry_backoff_ms
            return
        if assignments is None:
            return
        self._pending_leader = None
        self.on_leader_elected(assignments, now_ms)

    def on_leader_elected(self, assignments: Mapping[str, bytes], now_ms: int) -> None:
        self._send_sync(tuple(assignments.items()), now_ms)

    def on_join_follower(self, now_ms: int) -> None:
        self._send_sync((), now_ms)

    def _send_sync(self, assignments: tuple[tuple[str, bytes], ...], now_ms: int) -> None:
        cfg = self.rebalance_config
        req = SyncGroupRequest(
            group_id=cfg.group_id,
            generation_id=self.generation.generation_id,
            member_id=self.generation.member_id,
            group_instance_id=cfg.group_instance_id,
            protocol_type=self.protocol_type(),
            protocol_name=self.generation.protocol_name,
            assignments=assignments,
        )
        self._sync_request = self.send(req, now_ms, api=Api.SYNC_GROUP)

    def _handle_sync_group(self, inflight: InFlightRequest, resp: SyncGroupResponse, now_ms: int) -> None:
        self._sync_request = None
        rule = action_for(Api.SYNC_GROUP, resp.error)
        code = resp.error
        if rule.action is Action.SUCCESS:
            if resp.protocol_type is not None and resp.protocol_type != self.protocol_type():
                self._fatal(
                    FatalGroupError(
                        f"SyncGroup response protocol type {resp.protocol_type!r}",
                        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                    )
                )
                return
            if (
                self.has_generation_reset(self.generation)
                or self.state is not MemberState.COMPLETING_REBALANCE
            ):
                # reset meanwhile (heartbeat thread): discard, rejoin at once (Java: ILLEGAL_GENERATION)
                self.request_rejoin("the generation was reset while SyncGroup was in flight")
                return
            if resp.protocol_name is not None and resp.protocol_name != self.generation.protocol_name:
                self._fatal(
                    FatalGroupError(
                        f"SyncGroup response protocol name {resp.protocol_name!r} is not "
                        f"{self.generation.protocol_name!r}",
                        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                    )
                )
                return
            self._transition(MemberState.STABLE)
            self.rejoin_reason = ""
            self.rejoin_needed = False
            self._join_attempts = 0
            gen = self.generation
            self.on_join_complete(
                gen.generation_id, gen.member_id, gen.protocol_name, resp.assignment, now_ms
            )
            self.needs_join_prepare = True
            return
        stale = inflight.sent_generation != self.generation
        a = rule.if_stale if stale and rule.if_stale is not None else rule.action
        self._rebalance_failed("SyncGroup", a, rule, code, now_ms)

    # ================================================================== heartbeat
    def send_heartbeat_request(self, now_ms: int) -> None:
        """Java ``sendHeartbeatRequest``: Heartbeat(group id, member id, instance id, generation)."""
        cfg = self.rebalance_config
        req = HeartbeatRequest(
            group_id=cfg.group_id,
            generation_id=self.generation.generation_id,
            member_id=self.generation.member_id,
            group_instance_id=cfg.group_instance_id,
        )
        rid = self.send(req, now_ms, api=Api.HEARTBEAT)
        self.heartbeat.sent_heartbeat(now_ms, rid)

    def _handle_heartbeat(
        self, rid: int, inflight: InFlightRequest, resp: HeartbeatResponse, now_ms: int
    ) -> None:
        if self.heartbeat.in_flight == rid:
            self.heartbeat.in_flight = None
        code = resp.error
        rule = action_for(Api.HEARTBEAT, code)
        stale = inflight.sent_generation != self.generation
        a = rule.if_stale if stale and rule.if_stale is not None else rule.action
        if a is Action.SUCCESS or a is Action.IGNORE:
            self.heartbeat.receive_heartbeat(now_ms)
        elif a is Action.REJOIN:
            if self.state is MemberState.STABLE:
                self.request_rejoin("group is already rebalancing")
            self.heartbeat.receive_heartbeat(now_ms)  # keep the session alive while rebalancing
        elif a is Action.REDISCOVER:
            self.mark_coordinator_unknown(f"Heartbeat: {code.name}", now_ms)
            self.heartbeat.fail_heartbeat(now_ms)
        elif a is Action.RESET_AND_REJOIN:
            self.reset_state_and_rejoin(
                f"encountered {code.name} from Heartbeat response", not rule.keep_member_id
            )
            self.heartbeat.fail_heartbeat(now_ms)
        elif a is Action.FATAL:
            self.heartbeat_failed = FatalGroupError(f"Heartbeat failed: {code.name}", code)
            self.enabled = False
        else:
            self.heartbeat.fail_heartbeat(now_ms)

    # ================================================================== leave
    def maybe_leave_group(self, reason: str, now_ms: int) -> None:
        """Java ``maybeLeaveGroup``: LeaveGroup only from a dynamic member that has a member id,
        knows its coordinator and is not UNJOINED (static members never send it, since 2.3);
        then always back to UNJOINED with no generation and a rejoin requested."""
        if (
            self.is_dynamic_member()
            and self.coordinator is not None
            and self.state is not MemberState.UNJOINED
            and self.generation.has_member_id()
        ):
            log.info(
                "member %s sending LeaveGroup to coordinator %s due to %s",
                self.generation.member_id,
                self.coordinator,
                reason,
            )
            member = LeaveGroupMember(member_id=self.generation.member_id, reason=reason[:MAX_REASON_LENGTH])
            req = LeaveGroupRequest(group_id=self.rebalance_config.group_id, members=(member,))
            self.send(req, now_ms, api=Api.LEAVE_GROUP)
        self.reset_generation_on_leave_group()

    def reset_generation_on_leave_group(self) -> None:
        self._join_request = None
        self._sync_request = None
        self._pending_leader = None
        self.reset_state_and_rejoin("consumer pro-actively leaving the group", True)

    def _handle_leave_group(self, resp: LeaveGroupResponse) -> None:
        code = resp.error if resp.error is not ErrorCode.NONE or not resp.members else resp.members[0].error
        if action_for(Api.LEAVE_GROUP, code).action is not Action.SUCCESS:
            log.info("group %s: LeaveGroup answered %s (ignored)", self.rebalance_config.group_id, code.name)

    # ================================================================== dispatch
    def _dispatch(self, rid: int, inflight: InFlightRequest, response: Response, now_ms: int) -> None:
        if isinstance(response, FindCoordinatorResponse):
            self._handle_find_coordinator(response, now_ms)
        elif isinstance(response, JoinGroupResponse):
            if rid == self._join_request:
                self._handle_join_group(inflight, response, now_ms)
        elif isinstance(response, SyncGroupResponse):
            if rid == self._sync_request:
                self._handle_sync_group(inflight, response, now_ms)
        elif isinstance(response, HeartbeatResponse):
            self._handle_heartbeat(rid, inflight, response, now_ms)
        elif isinstance(response, LeaveGroupResponse):
            self._handle_leave_group(response)
        else:
            self.on_subclass_response(rid, inflight.tag, inflight.request, response, now_ms)

    def _fail(self, rid: int, inflight: InFlightRequest, now_ms: int) -> None:
        """A transport failure or timeout: handled as NETWORK_EXCEPTION by the table."""
        err = ErrorCode.NETWORK_EXCEPTION
        req = inflight.request
        if inflight.to_coordinator:
            self.mark_coordinator_unknown(f"{type(req).__name__} failed (disconnected or timed out)", now_ms)
        resp = failure_response(req, err)
        if resp is None:  # Metadata: the subclass handles the failure without a response
            self.on_subclass_response(rid, inflight.tag, req, None, now_ms)
            return
        self._dispatch(rid, inflight, resp, now_ms)

    # ================================================================== close
    def close_member(self, now_ms: int) -> None:
        """Java ``AbstractCoordinator.close``: stop heartbeats, prepare, leave (dynamic only).
        The member does not rejoin afterwards (:attr:`closing`)."""
        self.closing = True
        self.enabled = False
        if self.rebalance_config.leave_group_on_close:
            self.on_leave_prepare(now_ms)
            self.maybe_leave_group("the consumer is being closed", now_ms)

    def in_flight_count(self) -> int:
        return len(self._requests)


__all__ = ["AbstractCoordinator"]
