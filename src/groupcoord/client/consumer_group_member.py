"""The sans-I/O consumer-protocol member (KIP-848): Kafka's ``ConsumerMembershipManager`` with
its ``ConsumerHeartbeatRequestManager``, for ``group.protocol=consumer``.

:class:`ConsumerGroupMember` is driven like the classic core (``member.py``): every call takes
``now_ms``, requests come back as :class:`Outbound`, answers go in through :meth:`on_response` /
:meth:`on_failure`; it reads no clock and does no I/O, so the same core runs under a
``ManualClock`` in tests and in virtual time in the simulator. The states and their legal moves
are ``consumer_group_states.py``; every error's action is ``consumer_group_actions.py``; what a
heartbeat carries is ``consumer_group_heartbeat.py``; commits are ``consumer_group_commits.py``.

The driving contract
====================

``subscribe(topics)`` / ``subscribe_pattern(regex)``
    The subscription, sent as ``SubscribedTopicNames`` or (v1) ``SubscribedTopicRegex`` (an RE2
    pattern the broker resolves). A member out of the group joins on the next :meth:`poll`
    (Java ``onSubscriptionUpdated`` / ``onConsumerPoll``); a member in the group sends the change
    with its next heartbeat.
``poll(now_ms)``
    The application polled: resets the ``max.poll.interval.ms`` timer (a STALE member rejoins),
    joins after a subscribe; then one :meth:`background` turn.
``background(now_ms)`` (alias ``heartbeat_poll``, ``pending``)
    One turn of Kafka's network thread: coordinator lookup, the poll-timer check (expired: leave,
    then STALE), a heartbeat when due, the next reconciliation step, auto-commit (as Java's
    ``CommitRequestManager.poll``), commits, Metadata lookups of unknown topic ids.
``on_response(request_id, response, now_ms)`` / ``on_failure(request_id, now_ms)``
    Answers; a failure (broken connection, or ``request.timeout.ms``) counts as NETWORK_EXCEPTION.
``callback_completed(callback_id, error, now_ms)``
    The application ran the :class:`RebalanceCallbackNeeded` with that id (``error`` what it
    raised, or None). Reconciliation waits for it: commit, then ``on_partitions_revoked``, then
    ``on_partitions_assigned``, then the acknowledging heartbeat, as in Java.
``update_positions``, ``commit``, ``fetch_committed``, ``close``, ``unsubscribe``, ``events``,
``next_deadline_ms``
    Consumed positions (auto-commit and the commit before revocation commit them); commits and
    offset fetches (``CommitCompleted`` / ``CommittedOffsets`` events); leaving (commit, release
    the partitions, one heartbeat with epoch -1 or -2; :attr:`closed`); what the application
    must see; when the core next has something to do.

The core is not thread-safe; an adapter with two threads holds one lock around every call.

When heartbeats go and what their answers do is ``consumer_group_heartbeat_manager.py``; this
class is its ``HeartbeatHost``, as Java's membership manager is its heartbeat request manager's.
"""

from __future__ import annotations

import enum
import logging
import random
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer_group_assignment import (
    NO_ASSIGNMENT,
    LocalAssignment,
    Reconciliation,
    resolve,
)
from groupcoord.client.consumer_group_commits import CommitManager, Offsets
from groupcoord.client.consumer_group_events import (
    CallbackMethod,
    CommitCompleted,
    CommittedOffsets,
    FatalErrorEvent,
    MemberEvent,
    Outbound,
    RebalanceCallbackNeeded,
    Request,
    Response,
    generate_member_id,
)
from groupcoord.client.consumer_group_heartbeat import MemberView
from groupcoord.client.consumer_group_heartbeat_manager import HeartbeatRequestManager
from groupcoord.client.consumer_group_lookups import CoordinatorLookup, TopicIdNames
from groupcoord.client.consumer_group_messages import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.client.consumer_group_states import (
    ConsumerGroupMemberState,
    can_handle_new_assignment,
    check_transition,
    is_leaving_group,
    is_not_in_group,
    skips_heartbeat,
)
from groupcoord.client.errors import ConfigError, KafkaClientError
from groupcoord.client.heartbeat import ExponentialBackoff
from groupcoord.client.messages import (
    FindCoordinatorResponse,
    Node,
    OffsetCommitResponse,
    OffsetFetchResponse,
)
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode

log = logging.getLogger(__name__)

S = ConsumerGroupMemberState


class _Step(enum.Enum):
    COMMIT = "commit"
    REVOKE = "revoke"
    ASSIGN = "assign"
    LOST_FENCED = "lost after fencing"
    LOST_FATAL = "lost after a fatal error"
    LOST_STALE = "lost after the poll timeout"
    RELEASE_FOR_LEAVE = "release before leaving"


@dataclass(kw_only=True, slots=True)
class _InFlight:
    kind: str  # "find", "heartbeat", "leave", "commit", "metadata"
    deadline: int
    ignore_response: bool = False


@dataclass(kw_only=True, slots=True)
class _Waiting:
    step: _Step
    partitions: tuple[TopicPartition, ...] = field(default=())


class ConsumerGroupMember:
    """One consumer-protocol member of one group (see the module docstring)."""

    def __init__(
        self,
        config: ConsumerConfig,
        *,
        member_id: str | None = None,
        rng: random.Random | None = None,
        backoff_jitter: float = 0.2,
    ) -> None:
        if config.group_id is None or config.group_id.strip() == "":
            raise ConfigError("group.id is required for group.protocol=consumer")
        self.config = config
        self.group_id = config.group_id
        self.instance_id = config.group_instance_id
        self.rack_id = config.client_rack or None
        self.server_assignor = config.group_remote_assignor or None
        self.rebalance_timeout_ms = config.max_poll_interval_ms
        self.member_id = member_id if member_id is not None else generate_member_id()
        self.member_epoch = 0
        self.state = S.UNSUBSCRIBED
        self.subscribed_topics: tuple[str, ...] = ()
        self.subscribed_pattern: str | None = None
        self._subscription_updated = False
        self.coordinator: Node | None = None
        self.fatal_error: KafkaClientError | None = None
        self.current: LocalAssignment = NO_ASSIGNMENT
        """The last assignment reconciled (Java ``currentAssignment``)."""
        self.target: LocalAssignment = NO_ASSIGNMENT
        """The last assignment received (Java ``currentTargetAssignment``)."""
        self.owned: frozenset[TopicPartition] = frozenset()
        """The partitions the application owns (Java ``subscriptions.assignedPartitions()``)."""
        self._pending_revocation: frozenset[TopicPartition] = frozenset()
        self._awaiting_callback: frozenset[TopicPartition] = frozenset()
        self._assigned_names: dict[uuid.UUID, str] = {}
        self.positions: dict[TopicPartition, OffsetAndMetadata] = {}
        rng = rng or random.Random(0)
        self._backoff = ExponentialBackoff(
            config.retry_backoff_ms, config.retry_backoff_max_ms, rng, backoff_jitter
        )
        self.commits = CommitManager(self.group_id, self.instance_id, self._backoff)
        self._poll_deadline: int | None = None
        self._poll_timer_expired = False
        self._next_auto_commit: int | None = None
        self._recon: Reconciliation | None = None
        self._callbacks: dict[int, _Waiting] = {}
        self._revocation_commit: int | None = None
        """The commit before revocation the reconciliation waits for (its commit id)."""
        self._stale_release_pending = False
        self._rejoin_stale_when_released = False
        self.leave_in_progress = False
        self._closing = False
        self._close_commit: int | None = None
        self._close_callbacks = True
        self._next_id = 1
        self._inflight: dict[int, _InFlight] = {}
        self._outbox: list[Outbound] = []
        self._events: list[MemberEvent] = []
        self._find = CoordinatorLookup(self.group_id, self._backoff)
        self.topic_ids = TopicIdNames(self._backoff)
        self._now = 0
        self.heartbeat = HeartbeatRequestManager(self, self._backoff)

    # ================================================================== application calls
    def subscribe(self, topics: Iterable[str]) -> None:
        self._check_fatal()
        self.subscribed_topics = tuple(sorted(set(topics)))
        self.subscribed_pattern = None
        self._subscription_updated = True

    def subscribe_pattern(self, regex: str) -> None:
        """A broker-side (RE2J) pattern, sent as ``SubscribedTopicRegex`` (ConsumerGroupHeartbeat v1)."""
        self._check_fatal()
        self.subscribed_topics = ()
        self.subscribed_pattern = regex
        self._subscription_updated = True

    def update_positions(self, positions: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        for tp, oam in positions.items():
            if tp in self.owned:
                self.positions[tp] = oam

    def update_topic_names(self, names: Mapping[uuid.UUID, str]) -> None:
        """Topic ids the adapter learned from its own Metadata (Java's metadata cache)."""
        self.topic_ids.names.update(names)

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata] | None,
        now_ms: int,
        *,
        asynchronous: bool = False,
    ) -> int:
        """Queue an OffsetCommit (``None``: the consumed positions); answered by a
        ``CommitCompleted`` event with the returned id (at once when there is nothing to commit)."""
        self._tick(now_ms)
        chosen: Offsets = tuple(sorted((offsets if offsets is not None else self.positions).items()))
        deadline = now_ms + self.config.default_api_timeout_ms
        c = self.commits.add(chosen, sync=not asynchronous, before_revocation=False, deadline=deadline)
        if not chosen:  # nothing to send: done at once
            self.commits.pending.remove(c)
            self._events.append(CommitCompleted(commit_id=c.commit_id, offsets=(), error=None))
        return c.commit_id

    def fetch_committed(self, partitions: tuple[TopicPartition, ...], now_ms: int) -> int:
        """Queue an OffsetFetch of ``partitions`` (retried until ``default.api.timeout.ms``);
        answered by a ``CommittedOffsets`` event with the returned id."""
        self._tick(now_ms)
        return self.commits.add_fetch(partitions, now_ms + self.config.default_api_timeout_ms).fetch_id

    def callback_completed(self, callback_id: int, error: BaseException | None, now_ms: int) -> None:
        self._tick(now_ms)
        waiting = self._callbacks.pop(callback_id, None)
        if waiting is None:
            return
        if error is not None:
            log.warning("%s callback for %s failed: %r", waiting.step.value, waiting.partitions, error)
        self._after_step(waiting.step, error is None, now_ms)

    def unsubscribe(self, now_ms: int) -> None:
        self._tick(now_ms)
        self.leave_group(now_ms)

    def close(self, now_ms: int, *, run_callbacks: bool = True) -> None:
        """Commit (auto-commit on), release the partitions, send the leave heartbeat.

        ``run_callbacks`` False: the caller runs the release callbacks itself and the leave does
        not wait for them (Java's ``AsyncKafkaConsumer.close`` runs them on the application
        thread, then leaves with ``leaveGroup(runCallbacks=false)``)."""
        self._tick(now_ms)
        if self._closing:
            return
        self._closing = True
        self._close_callbacks = run_callbacks
        if self.config.enable_auto_commit and self.positions and self.fatal_error is None:
            self._close_commit = self.commit(None, now_ms)
        else:
            self.leave_group(now_ms, run_callbacks=run_callbacks)

    @property
    def closed(self) -> bool:
        """close() is done: the leave heartbeat was sent (or could not be) and no commit waits."""
        return (
            self._closing
            and self._close_commit is None
            and self.state in (S.UNSUBSCRIBED, S.FATAL)
            and not self.leave_in_progress
            and not self.commits.pending
        )

    def events(self) -> list[MemberEvent]:
        out, self._events = self._events, []
        return out

    def assignment(self) -> frozenset[TopicPartition]:
        return self.owned

    def fetchable(self) -> frozenset[TopicPartition]:
        """The owned partitions the fetcher may read: not those being revoked (Java
        ``markPendingRevocation``: no fetch from the moment the reconciliation starts), nor those
        added whose ``on_partitions_assigned`` has not returned (``assignFromSubscribedAwaitingCallback``)."""
        return self.owned - self._pending_revocation - self._awaiting_callback

    # ================================================================== driving
    def poll(self, now_ms: int) -> list[Outbound]:
        self._tick(now_ms)
        self._reset_poll_timer(now_ms)
        if self._subscription_updated:  # Java onConsumerPoll
            self._subscription_updated = False
            if self.state is S.UNSUBSCRIBED and not self._closing:
                self.transition_to_joining()
        return self.background(now_ms)

    def background(self, now_ms: int) -> list[Outbound]:
        self._tick(now_ms)
        self._ensure_coordinator(now_ms)
        self.heartbeat.poll(now_ms)
        if self.state is S.RECONCILING:
            self.maybe_reconcile(now_ms)
        self._maybe_auto_commit(now_ms)
        self._send_metadata(now_ms)
        self._send_commits(now_ms)
        out, self._outbox = self._outbox, []
        return out

    heartbeat_poll = background
    pending = background

    def on_response(self, request_id: int, response: Response, now_ms: int) -> None:
        self._tick(now_ms, expire=False)
        f = self._inflight.pop(request_id, None)
        if f is None:
            log.debug("ignoring the answer to request %d (expired or superseded)", request_id)
            return
        if isinstance(response, ConsumerGroupHeartbeatResponse):
            if f.ignore_response:
                log.info(
                    "poll-timeout leave of member %s answered %s", self.member_id, response.error_code.name
                )
            else:
                self.heartbeat.on_response(request_id, response, now_ms)
        elif isinstance(response, OffsetFetchResponse):
            self._on_fetch_answer(request_id, response, now_ms)
        elif isinstance(response, OffsetCommitResponse):
            self._on_commit_answer(request_id, self.commits.answer_of(response), now_ms)
        elif isinstance(response, FindCoordinatorResponse):
            self._on_find_coordinator(response, now_ms)
        else:
            self.topic_ids.on_response(response, now_ms)

    def on_failure(self, request_id: int, now_ms: int) -> None:
        self._tick(now_ms, expire=False)
        f = self._inflight.pop(request_id, None)
        if f is not None:
            self._fail(request_id, f, now_ms)

    def next_deadline_ms(self) -> int | None:
        if self._outbox:
            return self._now
        c: list[int] = [f.deadline for f in self._inflight.values()]
        find = self._find.next_deadline(wanted=self.coordinator is None and self._wants_coordinator())
        if find is not None:
            c.append(find)
        nh = self.heartbeat.next_deadline(self._now)
        if nh is not None:
            c.append(nh)
        active = self.coordinator is not None and not skips_heartbeat(self.state)
        if active and self._poll_deadline is not None and not is_leaving_group(self.state):
            c.append(self._poll_deadline)
        if self.state is S.RECONCILING and self._recon is None:
            c.append(self._now)
        nc = self.commits.next_deadline()
        if nc is not None:
            c.append(nc)
        nm = self.topic_ids.next_deadline()
        if nm is not None:
            c.append(nm)
        if self._next_auto_commit is not None and self.config.enable_auto_commit:
            c.append(self._next_auto_commit)
        return min(c) if c else None

    # ================================================================== transitions (Java names)
    def _transition(self, target: ConsumerGroupMemberState) -> None:
        check_transition(self.state, target)
        if self.state is not target:
            log.info("member %s (epoch %d): %s -> %s", self.member_id, self.member_epoch, self.state, target)
        self.state = target

    def transition_to_joining(self) -> None:
        if self.state is S.FATAL:
            return
        if self._recon is not None:
            self._recon.rejoined = True
        self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        self._transition(S.JOINING)
        self.target = NO_ASSIGNMENT
        self._assigned_names.clear()

    def transition_to_fenced(self, now: int) -> None:
        if self.state is S.PREPARE_LEAVING:
            self.transition_to_sending_leave_group(False)
            self._transition(S.UNSUBSCRIBED)
            self.leave_in_progress = False
            return
        if self.state is S.LEAVING:
            self._transition(S.UNSUBSCRIBED)
            self.leave_in_progress = False
            return
        if self.state is S.UNSUBSCRIBED:
            return
        self._transition(S.FENCED)
        self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        self._lost(_Step.LOST_FENCED, now)

    def transition_to_fatal(self, error: KafkaClientError, now: int) -> None:
        previous = self.state
        self.fatal_error = error
        self._events.append(FatalErrorEvent(error=error, fatal=True))
        self._transition(S.FATAL)
        if previous is S.UNSUBSCRIBED:
            return
        if previous in (S.LEAVING, S.PREPARE_LEAVING):
            self.leave_in_progress = False
            return
        self._lost(_Step.LOST_FATAL, now)

    def leave_group(self, now: int, *, run_callbacks: bool = True) -> None:
        """Java ``leaveGroup``: PREPARE_LEAVING, release the partitions, LEAVING."""
        if is_not_in_group(self.state):
            if self.state is S.FENCED:
                self._clear_assignment()
                self._transition(S.UNSUBSCRIBED)
            self._unsubscribe_locally()
            return
        if is_leaving_group(self.state):
            return
        self._transition(S.PREPARE_LEAVING)
        self.leave_in_progress = True
        dropped = tuple(sorted(self.owned))
        if not dropped or not run_callbacks:
            self._after_step(_Step.RELEASE_FOR_LEAVE, True, now)
        elif self.member_epoch > 0:
            self._callback(_Step.RELEASE_FOR_LEAVE, CallbackMethod.ON_PARTITIONS_REVOKED, dropped)
        else:
            self._callback(_Step.RELEASE_FOR_LEAVE, CallbackMethod.ON_PARTITIONS_LOST, dropped)

    def transition_to_sending_leave_group(self, due_to_expired_poll_timer: bool) -> None:
        if self.state in (S.FATAL, S.UNSUBSCRIBED):
            return
        if due_to_expired_poll_timer:
            self._poll_timer_expired = True
            self._transition(S.PREPARE_LEAVING)
        self.member_epoch = self.leave_group_epoch()
        self.current = NO_ASSIGNMENT
        self._transition(S.LEAVING)

    def leave_group_epoch(self) -> int:
        return LEAVE_GROUP_STATIC_MEMBER_EPOCH if self.instance_id is not None else LEAVE_GROUP_MEMBER_EPOCH

    # ================================================================== the heartbeat manager's host
    def poll_timer_expired(self, now: int) -> bool:
        return self._poll_deadline is not None and now >= self._poll_deadline

    def view(self) -> MemberView:
        return MemberView(
            state=self.state,
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            subscribed_topic_names=self.subscribed_topics,
            subscribed_topic_regex=self.subscribed_pattern,
            server_assignor=self.server_assignor,
            assignment=self.current,
        )

    def send_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest, now: int, *, ignore_response: bool
    ) -> int:
        kind = "leave" if self.state is S.LEAVING else "heartbeat"
        return self._send(request, self.coordinator, kind, now, ignore_response=ignore_response)

    def on_heartbeat_request_skipped(self) -> None:
        if self.state is S.LEAVING:  # no coordinator: give the leave up (onHeartbeatRequestSkipped)
            self._transition(S.UNSUBSCRIBED)
            self.leave_in_progress = False

    def on_heartbeat_failure(self) -> None:
        if self.state is S.UNSUBSCRIBED:
            self.leave_in_progress = False  # the leave is sent once; any answer completes it

    def mark_coordinator_unknown(self, now: int) -> None:
        self._mark_coordinator_unknown(now)

    def report(self, error: KafkaClientError) -> None:
        self._events.append(FatalErrorEvent(error=error, fatal=False))

    def on_heartbeat_request_generated(self, now: int) -> None:
        if self.state is S.ACKNOWLEDGING:
            self._transition(S.STABLE if self._target_reconciled() else S.RECONCILING)
        elif self.state is S.LEAVING:
            if self._poll_timer_expired:
                self._transition(S.STALE)
                self._stale_release_pending = True
                self._lost(_Step.LOST_STALE, now)
            else:
                self._transition(S.UNSUBSCRIBED)

    def on_heartbeat_success(self, r: ConsumerGroupHeartbeatResponse, now: int) -> None:
        """Java ``ConsumerMembershipManager.onHeartbeatSuccess``."""
        if self.state is S.LEAVING:
            return
        if self.state is S.UNSUBSCRIBED and self.leave_in_progress:
            self.leave_in_progress = False
            return
        if is_not_in_group(self.state):
            return
        self.member_epoch = r.member_epoch
        if r.assignment is None:
            return
        if not can_handle_new_assignment(self.state):
            log.debug("ignoring an assignment received in %s", self.state.value)
            return
        self._process_assignment_received({t: frozenset(ps) for t, ps in r.assignment.items() if ps})

    def _process_assignment_received(self, assignment: dict[uuid.UUID, frozenset[int]]) -> None:
        updated = self.target.updated_with(assignment)
        if updated is not None:
            self.target = updated
        if not self._target_reconciled():
            self._transition(S.RECONCILING)
        elif self.state in (S.RECONCILING, S.JOINING):
            self._transition(S.STABLE)

    def _target_reconciled(self) -> bool:
        return self.current.same_as(self.target)

    # ================================================================== reconciliation
    def maybe_reconcile(self, now: int) -> None:
        """Java ``maybeReconcile``: resolve names, then commit -> revoke -> assign -> ack."""
        if self._target_reconciled() or self._recon is not None:
            return
        res = resolve(self.target, self.topic_ids.names, self._assigned_names)
        if res.unresolved:
            self.topic_ids.want(res.unresolved)  # metadata.requestUpdate(true)
        resolved, assigned = res.resolved, res.assigned
        if not self.current.is_none() and dict(resolved.partitions) == dict(self.current.partitions):
            self.current = resolved  # only the unresolved rest differs: ack the resolved part
            self._transition(S.ACKNOWLEDGING)
            return
        added = tuple(sorted(assigned - self.owned))
        revoked = tuple(sorted(self.owned - assigned))
        self._recon = Reconciliation(resolved=resolved, assigned=assigned, added=added, revoked=revoked)
        self._pending_revocation = frozenset(revoked)
        log.info(
            "member %s reconciling local epoch %d: assigned %s, added %s, revoked %s",
            self.member_id,
            resolved.local_epoch,
            sorted(assigned),
            added,
            revoked,
        )
        consumed = self._consumed()
        if self.config.enable_auto_commit and consumed:
            c = self.commits.add(
                consumed, sync=True, before_revocation=True, deadline=now + self.rebalance_timeout_ms
            )
            self._revocation_commit = c.commit_id
        else:
            self._after_step(_Step.COMMIT, True, now)

    def _abort_reconciliation(self) -> bool:
        recon = self._recon
        if recon is None:
            return True
        if self.state is not S.RECONCILING or recon.rejoined:
            log.info("interrupting a reconciliation that is no longer relevant (%s)", self.state.value)
            self._recon = None
            return True
        return False

    def _after_step(self, step: _Step, ok: bool, now: int) -> None:
        """The reconciliation, leave and loss flows, continued once a step (commit, callback) ends."""
        if step is _Step.COMMIT:
            if self._abort_reconciliation():
                return
            assert self._recon is not None
            if self._recon.revoked:
                self._callback(_Step.REVOKE, CallbackMethod.ON_PARTITIONS_REVOKED, self._recon.revoked)
            else:
                self._after_step(_Step.REVOKE, True, now)
        elif step is _Step.REVOKE:
            if not ok:
                self._recon = None  # stays RECONCILING without an ack; retried on the next turn
                return
            if self._abort_reconciliation():
                return
            recon = self._recon
            assert recon is not None
            self.owned = recon.assigned  # assignFromSubscribedAwaitingCallback
            self._pending_revocation = frozenset()
            self._awaiting_callback = frozenset(recon.added)
            self._drop_positions()
            topics = {tp.topic for tp in recon.assigned}
            self._assigned_names = {k: v for k, v in self._assigned_names.items() if v in topics}
            self._callback(_Step.ASSIGN, CallbackMethod.ON_PARTITIONS_ASSIGNED, recon.added)
        elif step is _Step.ASSIGN:
            recon = self._recon
            if not ok:  # the added partitions stay unfetchable until a later reconciliation
                self._recon = None
                return
            self._awaiting_callback = frozenset()
            if recon is not None and not self._abort_reconciliation():
                self.current = recon.resolved
                self._next_auto_commit = now + self.config.auto_commit_interval_ms  # resetAutoCommitTimer
                self._transition(S.ACKNOWLEDGING)
                self._recon = None
        elif step is _Step.LOST_FENCED:
            self._clear_assignment()
            if self.state is S.FENCED:
                self.transition_to_joining()
        elif step is _Step.LOST_FATAL:
            self._clear_assignment()
        elif step is _Step.LOST_STALE:
            self._clear_assignment()
            self._stale_release_pending = False
            if self._rejoin_stale_when_released and self.state is S.STALE:
                self._rejoin_stale_when_released = False
                self.transition_to_joining()
        elif step is _Step.RELEASE_FOR_LEAVE:
            self._unsubscribe_locally()
            self._clear_assignment()
            self.transition_to_sending_leave_group(False)

    def _callback(self, step: _Step, method: CallbackMethod, partitions: tuple[TopicPartition, ...]) -> None:
        cid = self._next_id
        self._next_id += 1
        self._callbacks[cid] = _Waiting(step=step, partitions=partitions)
        self._events.append(RebalanceCallbackNeeded(callback_id=cid, method=method, partitions=partitions))

    def _lost(self, step: _Step, now: int) -> None:
        lost = tuple(sorted(self.owned))
        if lost:
            self._callback(step, CallbackMethod.ON_PARTITIONS_LOST, lost)
        else:
            self._after_step(step, True, now)

    def _clear_assignment(self) -> None:
        self.owned = frozenset()
        self._pending_revocation = self._awaiting_callback = frozenset()
        self.positions.clear()
        self.current = NO_ASSIGNMENT
        self.target = NO_ASSIGNMENT
        self._assigned_names.clear()

    def _unsubscribe_locally(self) -> None:
        self.subscribed_topics = ()
        self.subscribed_pattern = None
        self._subscription_updated = False

    def _drop_positions(self) -> None:
        for tp in list(self.positions):
            if tp not in self.owned:
                del self.positions[tp]

    def _consumed(self) -> Offsets:
        return tuple(sorted((tp, oam) for tp, oam in self.positions.items() if tp in self.owned))

    # ================================================================== poll timer, auto-commit
    def _reset_poll_timer(self, now: int) -> None:
        """Java ``resetPollTimer``: an expired timer rejoins a STALE member (once released)."""
        if self._poll_deadline is not None and now >= self._poll_deadline:
            self._poll_timer_expired = False  # maybeRejoinStaleMember
            if self.state is S.STALE:
                if self._stale_release_pending:
                    self._rejoin_stale_when_released = True
                else:
                    self.transition_to_joining()
        self._poll_deadline = now + self.config.max_poll_interval_ms

    def _maybe_auto_commit(self, now: int) -> None:
        """Every ``auto.commit.interval.ms`` the consumed positions, asynchronously (Java
        ``maybeAutoCommitAsync``), one at a time."""
        if not self.config.enable_auto_commit or is_not_in_group(self.state) or self._closing:
            return
        interval = self.config.auto_commit_interval_ms
        if self._next_auto_commit is None or now >= self._next_auto_commit:
            due = self._next_auto_commit is not None
            self._next_auto_commit = now + interval
            consumed = self._consumed()
            if due and consumed and not any(not c.sync for c in self.commits.pending):
                self.commits.add(consumed, sync=False, before_revocation=False, deadline=now + interval)

    # ================================================================== commits
    def _send_commits(self, now: int) -> None:
        if self.coordinator is None:
            return
        for c in self.commits.sendable(now):
            request = self.commits.request(c, self.member_id, self.member_epoch)
            c.request_id = self._send(request, self.coordinator, "commit", now)
        for f in self.commits.sendable_fetches(now):
            f.request_id = self._send(self.commits.fetch_request(f), self.coordinator, "fetch", now)

    def _on_fetch_answer(self, rid: int, response: OffsetFetchResponse | None, now: int) -> None:
        fetch = self.commits.fetch_by_request(rid)
        outcome = None if fetch is None else self.commits.on_fetch_answer(fetch, response, now)
        if outcome is not None and outcome.mark_coordinator_unknown:
            self._mark_coordinator_unknown(now)
        if outcome is not None and outcome.done:
            self._events.append(
                CommittedOffsets(
                    fetch_id=outcome.fetch.fetch_id, offsets=outcome.offsets, error=outcome.error
                )
            )

    def _on_commit_answer(self, rid: int, code: ErrorCode, now: int) -> None:
        commit = self.commits.by_request(rid)
        if commit is None:
            return
        outcome = self.commits.on_answer(
            commit, code, now, member_epoch=self.member_epoch, latest_offsets=self._consumed
        )
        if outcome.mark_coordinator_unknown:
            self._mark_coordinator_unknown(now)
        if not outcome.done:
            return
        c = outcome.commit
        if c.before_revocation:  # success or not, the reconciliation goes on
            if self._revocation_commit == c.commit_id:
                self._revocation_commit = None
                self._after_step(_Step.COMMIT, True, now)
            return
        self._events.append(CommitCompleted(commit_id=c.commit_id, offsets=c.offsets, error=outcome.error))
        if self._close_commit == c.commit_id:
            self._close_commit = None
            self.leave_group(now, run_callbacks=self._close_callbacks)

    # ================================================================== coordinator, metadata
    def _wants_coordinator(self) -> bool:
        waiting = bool(self.commits.pending or self.commits.fetches)
        return (not skips_heartbeat(self.state) and self.fatal_error is None) or waiting

    def _ensure_coordinator(self, now: int) -> None:
        request = self._find.request(now, wanted=self.coordinator is None and self._wants_coordinator())
        if request is not None:
            self._find.retry.request_id = self._send(request, None, "find", now)

    def _on_find_coordinator(self, r: FindCoordinatorResponse, now: int) -> None:
        self.coordinator, error = self._find.on_response(r, now)
        if error is not None:
            self._events.append(FatalErrorEvent(error=error, fatal=False))

    def _mark_coordinator_unknown(self, now: int) -> None:
        if self.coordinator is None:
            return
        log.info("group %s: coordinator %s marked unknown", self.group_id, self.coordinator)
        self.coordinator = None
        for rid, f in list(self._inflight.items()):
            if f.kind in ("heartbeat", "commit", "fetch", "leave"):
                del self._inflight[rid]
                self._fail(rid, f, now)

    def _send_metadata(self, now: int) -> None:
        request = self.topic_ids.request(now)
        if request is not None:
            self.topic_ids.retry.request_id = self._send(request, None, "metadata", now)

    # ================================================================== plumbing
    def _send(
        self, request: Request, node: Node | None, kind: str, now: int, *, ignore_response: bool = False
    ) -> int:
        rid = self._next_id
        self._next_id += 1
        timeout = self.config.request_timeout_ms
        self._inflight[rid] = _InFlight(kind=kind, deadline=now + timeout, ignore_response=ignore_response)
        self._outbox.append(Outbound(request_id=rid, request=request, node=node, timeout_ms=timeout))
        return rid

    def _fail(self, rid: int, f: _InFlight, now: int) -> None:
        if f.kind == "find":
            self._find.retry.failed(now)
        elif f.kind == "metadata":
            self.topic_ids.retry.failed(now)
        elif f.kind == "commit":
            self._on_commit_answer(rid, ErrorCode.NETWORK_EXCEPTION, now)
        elif f.kind == "fetch":
            self._on_fetch_answer(rid, None, now)
        elif f.ignore_response:
            return
        else:  # heartbeat or leave
            self.heartbeat.on_failure(rid, now)

    def _tick(self, now: int, *, expire: bool = True) -> None:
        self._now = max(self._now, now)
        if not expire:
            return
        for rid, f in list(self._inflight.items()):
            if now >= f.deadline and rid in self._inflight:
                del self._inflight[rid]
                self._fail(rid, f, now)

    def _check_fatal(self) -> None:
        if self.fatal_error is not None:
            raise self.fatal_error
