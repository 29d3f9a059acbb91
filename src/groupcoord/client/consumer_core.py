"""The sans-I/O consumer member: the client's ``ConsumerCoordinator`` (seed 004).

:class:`ConsumerCoordinator` is an :class:`~groupcoord.client.member.AbstractCoordinator` for
protocol type ``consumer``. It is driven exactly as ``member.py`` describes (``poll``,
``heartbeat_poll``, ``pending``, ``on_response``, ``on_failure``, ``next_deadline_ms``,
``events``) and adds the consumer's own calls:

``subscribe(topics)`` / ``subscribe_pattern(regex)``
    Auto-assigned membership; a pattern is matched against the topics of the Metadata the
    core requests (internal topics excluded unless ``exclude.internal.topics`` is false).
``assign(partitions)`` / ``unsubscribe(now_ms)``
    Manual assignment (no group membership; commits carry generation -1 and member "");
    leaving the subscription (revoke or lose, then LeaveGroup for dynamic members).
``update_positions(positions)``
    The adapter tells the core the position (next offset to read) of each partition whose
    records it handed to the application; auto-commit and ``commit(None, ...)`` commit them.
``commit(offsets, now_ms, *, asynchronous) -> int``
    Queues an OffsetCommit (``offsets`` None = the consumed positions). The result arrives as
    a :class:`CommitCompleted` event with that id (error ``None`` on success, else
    :class:`CommitFailedError` / :class:`FatalGroupError` / a retriable
    :class:`KafkaClientError`). A synchronous commit retries retriable errors with backoff
    until ``default.api.timeout.ms``; an asynchronous one does not retry.
``fetch_committed(partitions, now_ms) -> int``
    Queues an OffsetFetch; answered by a :class:`CommittedOffsets` event with that id.
``close(now_ms)``
    Commits the consumed positions if auto-commit is on, then revokes and leaves (dynamic
    members only send LeaveGroup). :attr:`closed` turns true when nothing is left to send;
    drive it with ``pending(now_ms)``.

Events (:meth:`events`), delivered by the adapter on the application's thread in order:
:class:`PartitionsRevoked`, :class:`PartitionsAssigned`, :class:`PartitionsLost` (the
``on_revoke`` / ``on_assign`` / ``on_lost`` callbacks), :class:`StartingPositions` (the
committed offsets of newly assigned partitions, ``None`` where nothing is committed: the
fetcher applies ``auto.offset.reset`` to those), :class:`CommitCompleted`,
:class:`CommittedOffsets`, and :class:`FatalErrorEvent` (all in ``events.py``).

:class:`ConsumerCoordinator` is one class, as Java's is: the join hooks, the leader's
assignment, commits and offset fetches share the subscription, the owned partitions and the
commit bookkeeping, and each rebalance step decides what the commit paths may do. What stands
alone lives beside it: topic metadata in ``consumer_metadata.py``, the events in ``events.py``,
the assignors in ``assignors/``, the generic member in ``member.py``.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from groupcoord.client.actions import Action, Api, action_for
from groupcoord.client.assignors import parse_strategies
from groupcoord.client.assignors.base import (
    Assignment,
    Assignor,
    RebalanceProtocol,
    Subscription,
    assignment_from_bytes,
    assignment_to_bytes,
    select_rebalance_protocol,
    subscription_from_bytes,
    subscription_to_bytes,
    validate_cooperative_assignment,
)
from groupcoord.client.config import ConsumerConfig, rebalance_config_of
from groupcoord.client.consumer_metadata import ConsumerMetadata
from groupcoord.client.errors import CommitFailedError, ConfigError, FatalGroupError, KafkaClientError
from groupcoord.client.events import (
    CommitCompleted,
    CommittedOffsets,
    MemberEvent,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    StartingPositions,
)
from groupcoord.client.member import AbstractCoordinator
from groupcoord.client.messages import (
    JoinGroupResponseMember,
    MetadataRequest,
    MetadataResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Request,
    Response,
    commit_errors,
    fetch_error,
    fetched_offsets,
    offset_commit_request,
    offset_fetch_request,
)
from groupcoord.client.states import MemberState
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.errors import ErrorCode
from groupcoord.formats.consumer_protocol import CONSUMER_PROTOCOL_TYPE

log = logging.getLogger(__name__)

COOPERATIVE_STICKY = "cooperative-sticky"


@dataclass(kw_only=True, slots=True)
class _Commit:
    commit_id: int
    offsets: tuple[tuple[TopicPartition, OffsetAndMetadata], ...]
    sync: bool
    internal: bool
    deadline: int
    not_before: int = 0
    attempts: int = 0


@dataclass(kw_only=True, slots=True)
class _Fetch:
    fetch_id: int
    partitions: tuple[TopicPartition, ...]
    internal: bool  # starting positions after an assignment
    deadline: int | None
    not_before: int = 0
    attempts: int = 0


class ConsumerCoordinator(AbstractCoordinator):
    """The consumer member core (see the module docstring)."""

    def __init__(
        self,
        config: ConsumerConfig,
        *,
        assignors: Sequence[Assignor] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        super().__init__(rebalance_config_of(config), rng=rng)
        self.config = config
        self.assignors: list[Assignor] = (
            list(assignors)
            if assignors is not None
            else parse_strategies(config.partition_assignment_strategy)
        )
        if not self.assignors:
            raise ConfigError("partition.assignment.strategy: no assignor configured")
        self.rebalance_protocol = select_rebalance_protocol(self.assignors)
        self._subscription: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None
        self._auto_assigned = False
        self._assignment: set[TopicPartition] = set()
        self._joined_subscription: frozenset[str] | None = None
        self._positions: dict[TopicPartition, OffsetAndMetadata] = {}
        # metadata
        self.topic_metadata = ConsumerMetadata(
            max_age_ms=config.metadata_max_age_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            exclude_internal_topics=config.exclude_internal_topics,
        )
        self._leader_md_wait: int | None = None
        self._group_subscription: frozenset[str] = frozenset()
        self.is_leader = False
        self._assignment_snapshot: dict[str, int] | None = None
        self._follow_up_generation: int | None = None
        # commits and fetches
        self._next_commit_id = 1
        self._commits: list[_Commit] = []
        self._commits_in_flight: dict[int, _Commit] = {}
        self._fetches: list[_Fetch] = []
        self._fetches_in_flight: dict[int, _Fetch] = {}
        self._next_auto_commit = 0
        self._auto_commit_in_flight: int | None = None
        self._prepare_commit: int | None = None
        self._prepare_deadline = 0
        # close
        self._closing = False
        self._close_commit: int | None = None
        self._close_done = False

    # ================================================================== application calls
    def subscribe(self, topics: Iterable[str]) -> None:
        """Subscribe to a list of topics (auto-assigned membership)."""
        if self.config.group_id is None:
            raise ConfigError("group.id is required to subscribe")
        self._pattern = None
        self._set_subscription(frozenset(topics))

    def subscribe_pattern(self, pattern: str | re.Pattern[str]) -> None:
        """Subscribe to every topic whose whole name matches ``pattern``."""
        if self.config.group_id is None:
            raise ConfigError("group.id is required to subscribe")
        self._pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self._auto_assigned = True
        self.topic_metadata.wanted = True
        self._apply_pattern()

    def _set_subscription(self, topics: frozenset[str]) -> None:
        if not self._auto_assigned:
            self._assignment.clear()
        self._auto_assigned = True
        if topics != self._subscription:
            log.info("group %s: subscription %s", self.rebalance_config.group_id, sorted(topics))
            self._subscription = topics

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Manual assignment: no group membership (leave first with :meth:`unsubscribe`)."""
        self._auto_assigned = False
        self._pattern = None
        self._subscription = frozenset()
        self._assignment = set(partitions)
        self._positions = {tp: p for tp, p in self._positions.items() if tp in self._assignment}

    def unsubscribe(self, now_ms: int) -> None:
        """Java ``unsubscribe``: revoke (or lose) the assignment, leave (dynamic members), forget
        the subscription."""
        if self._auto_assigned:
            self.on_leave_prepare(now_ms)
            self.maybe_leave_group("the consumer unsubscribed from all topics", now_ms)
        self._auto_assigned = False
        self._pattern = None
        self._subscription = frozenset()
        self._assignment.clear()
        self._positions.clear()

    def subscription(self) -> frozenset[str]:
        return self._subscription

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset(self._assignment)

    def update_positions(self, positions: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Positions (next offset to read) the application has consumed up to."""
        for tp, om in positions.items():
            if tp in self._assignment:
                self._positions[tp] = om

    def consumed_positions(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return {tp: om for tp, om in self._positions.items() if tp in self._assignment}

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata] | None,
        now_ms: int,
        *,
        asynchronous: bool = False,
    ) -> int:
        """Queue a commit; its outcome is a :class:`CommitCompleted` event with the returned id."""
        chosen = self.consumed_positions() if offsets is None else dict(offsets)
        return self._queue_commit(chosen, now_ms, sync=not asynchronous, internal=False)

    def fetch_committed(self, partitions: Iterable[TopicPartition], now_ms: int) -> int:
        """Queue an OffsetFetch; answered by a :class:`CommittedOffsets` event with the returned id."""
        fid = self._new_commit_id()
        if self.config.group_id is None:
            self._events.append(
                CommittedOffsets(
                    fetch_id=fid, offsets=(), error=KafkaClientError("committed() needs group.id")
                )
            )
            return fid
        self._fetches.append(
            _Fetch(
                fetch_id=fid,
                partitions=tuple(sorted(set(partitions))),
                internal=False,
                deadline=now_ms + self.config.default_api_timeout_ms,
            )
        )
        return fid

    def close(self, now_ms: int) -> None:
        """Start closing: commit consumed positions (auto-commit), then revoke and leave."""
        if self._closing:
            return
        self._closing = True
        self.enabled = False
        if self.config.enable_auto_commit and self.config.group_id is not None and self.consumed_positions():
            self._close_commit = self._queue_commit(
                self.consumed_positions(), now_ms, sync=True, internal=True
            )
        self.on_pending(now_ms)

    @property
    def closed(self) -> bool:
        """True once close has nothing left to send (the leave, if any, has been handed out)."""
        return self._close_done and not self._requests.ready

    # ================================================================== member hooks
    def protocol_type(self) -> str:
        return CONSUMER_PROTOCOL_TYPE

    def group_active(self) -> bool:
        return self._auto_assigned and not self._closing and self.config.group_id is not None

    def needs_coordinator(self) -> bool:
        return bool(self._commits or self._fetches) and self.config.group_id is not None

    def rejoin_needed_or_pending(self) -> bool:
        if not self._auto_assigned:
            return False
        if (
            self.state is MemberState.STABLE
            and self._joined_subscription is not None
            and self._joined_subscription != self._subscription
            and not self.rejoin_needed
        ):
            self.request_rejoin("subscription has changed")
        if self.is_leader and self._assignment_snapshot is not None and not self.rejoin_needed:
            known = self.topic_metadata.partitions
            current = {t: known.get(t, 0) for t in self._assignment_snapshot}
            current.update({t: n for t, n in known.items() if t in self._group_subscription})
            current = {t: n for t, n in current.items() if n > 0}
            if current != self._assignment_snapshot:
                self.request_rejoin("cached metadata has changed")
        return super().rejoin_needed_or_pending()

    def metadata(self) -> Sequence[tuple[str, bytes]]:
        topics = tuple(sorted(self._subscription))
        owned = tuple(sorted(self._assignment))
        self._joined_subscription = frozenset(topics)
        rack = self.config.client_rack or None
        out: list[tuple[str, bytes]] = []
        for a in self.assignors:
            sub = Subscription(
                topics=topics,
                user_data=a.subscription_user_data(set(topics)),
                owned_partitions=owned,
                generation_id=self.generation.generation_id,
                rack_id=rack,
            )
            out.append((a.name, subscription_to_bytes(sub)))
        return out

    def on_join_prepare(self, now_ms: int, generation_id: int, member_id: str) -> bool:
        """Java ``onJoinPrepare``: auto-commit (bounded by the rebalance timeout), then revoke."""
        if self._pattern is not None and self.topic_metadata.version == 0:
            self.topic_metadata.wanted = True
            return False
        if self.config.enable_auto_commit and self.state is MemberState.STABLE:
            if self._prepare_commit is None:
                offsets = self.consumed_positions()
                if offsets:
                    self._prepare_commit = self._queue_commit(offsets, now_ms, sync=False, internal=True)
                    self._prepare_deadline = now_ms + self.rebalance_config.rebalance_timeout_ms
                    self.on_pending(now_ms)
            if self._prepare_commit is not None and self._commit_pending(self._prepare_commit):
                if now_ms < self._prepare_deadline:
                    return False
                log.error(
                    "group %s: pre-rebalance commit did not finish in time", self.rebalance_config.group_id
                )
        self._prepare_commit = None
        owned = tuple(sorted(self._assignment))
        if generation_id == -1 or member_id == "":
            if owned:
                self._emit_partitions(PartitionsLost(partitions=owned))
            self._drop(owned)
        elif self.rebalance_protocol is RebalanceProtocol.EAGER:
            self._emit_partitions(PartitionsRevoked(partitions=owned))
            self._drop(owned)
        else:
            revoked = tuple(tp for tp in owned if tp.topic not in self._subscription)
            if revoked:
                self._emit_partitions(PartitionsRevoked(partitions=revoked))
                self._drop(revoked)
        self.is_leader = False
        self._assignment_snapshot = None
        self._leader_md_wait = None
        return True

    def perform_assignment(
        self,
        leader_id: str,
        protocol: str,
        members: Sequence[JoinGroupResponseMember],
        skip_assignment: bool,
        now_ms: int,
    ) -> Mapping[str, bytes] | None:
        """Java ``ConsumerCoordinator.onLeaderElected``: fresh metadata, then the chosen assignor."""
        assignor = self._lookup_assignor(protocol)
        if assignor is None:
            raise KafkaClientError(f"coordinator selected invalid assignment protocol {protocol!r}")
        try:
            subs = {
                m.member_id: subscription_from_bytes(m.metadata, group_instance_id=m.group_instance_id)
                for m in members
            }
        except ValueError as e:
            raise KafkaClientError(f"a member's subscription cannot be read: {e}") from e
        all_topics = frozenset(t for s in subs.values() for t in s.topics)
        if self._leader_md_wait is None:
            self._request_metadata(tuple(sorted(all_topics | self._subscription)), now_ms, force=True)
            self._leader_md_wait = self.topic_metadata.version
            return None
        if self.topic_metadata.version <= self._leader_md_wait:
            if self.topic_metadata.can_send(now_ms):
                self._request_metadata(tuple(sorted(all_topics | self._subscription)), now_ms, force=True)
            return None
        self._leader_md_wait = None
        self.is_leader = True
        self._group_subscription = all_topics
        known = self.topic_metadata.partitions
        per_topic = {t: known[t] for t in sorted(all_topics) if known.get(t, 0) > 0}
        self._assignment_snapshot = dict(per_topic)
        if skip_assignment:
            return {}
        try:
            result = assignor.assign(per_topic, subs)
            if (
                self.rebalance_protocol is RebalanceProtocol.COOPERATIVE
                and assignor.name != COOPERATIVE_STICKY
            ):
                validate_cooperative_assignment(subs, result)
        except ValueError as e:
            raise KafkaClientError(f"assignor {assignor.name} failed: {e}") from e
        log.info(
            "group %s: leader %s assigned with %s: %s",
            self.rebalance_config.group_id,
            leader_id,
            assignor.name,
            {m: list(a.partitions) for m, a in result.items()},
        )
        return {m: assignment_to_bytes(result.get(m, Assignment())) for m in subs}

    def on_join_complete(
        self, generation_id: int, member_id: str, protocol: str | None, assignment: bytes, now_ms: int
    ) -> None:
        """Java ``ConsumerCoordinator.onJoinComplete``: apply the assignment, emit the events."""
        if not self.is_leader:
            self._assignment_snapshot = None
        assignor = self._lookup_assignor(protocol or "")
        if assignor is None:
            self._report(KafkaClientError(f"coordinator selected unknown protocol {protocol!r}"))
            self.request_rejoin("unknown assignment protocol")
            return
        try:
            a = assignment_from_bytes(assignment) if assignment else Assignment()
        except ValueError as e:
            self._report(KafkaClientError(f"assignment cannot be read: {e}"))
            self.request_rejoin("unreadable assignment")
            return
        assigned = set(a.partitions)
        if self._pattern is not None:
            # the leader's metadata may know matching topics ours does not yet (Java
            # maybeUpdateJoinedSubscription): a topic the pattern matches is subscribed
            extra = {tp.topic for tp in assigned if self._pattern.fullmatch(tp.topic)} - self._subscription
            if extra:
                self._subscription = self._subscription | extra
                self._joined_subscription = self._subscription
        if any(tp.topic not in self._subscription for tp in assigned):
            self.request_rejoin("received assignment does not match the current subscription")
            return
        owned = set(self._assignment)
        added = tuple(sorted(assigned - owned))
        if self.rebalance_protocol is RebalanceProtocol.COOPERATIVE:
            revoked = tuple(sorted(owned - assigned))
            if revoked:
                self._emit_partitions(PartitionsRevoked(partitions=revoked))
                self._drop(revoked)
                self.request_rejoin("need to revoke partitions and re-join")
                self._follow_up_generation = generation_id
            elif self._follow_up_generation == generation_id:
                # The follow-up rejoin of a cooperative revocation came back with the *same*
                # generation: no rebalance ran (a static member reset by its poll timeout rejoins
                # as a restart and gets its old assignment back), so the revoked partitions are
                # still withheld from everyone. Ask once more, with the known member id.
                self.request_rejoin("the cooperative follow-up rebalance did not happen")
                self._follow_up_generation = None
            else:
                self._follow_up_generation = None
        try:
            assignor.on_assignment(a, generation_id)
        except Exception as e:  # an assignor's bug must not wedge the member
            log.warning("assignor %s on_assignment failed: %s", assignor.name, e)
        self._assignment = assigned
        self._next_auto_commit = now_ms + self.config.auto_commit_interval_ms
        self._emit_partitions(PartitionsAssigned(partitions=added, generation_id=generation_id))
        if added:
            self._fetches.append(
                _Fetch(fetch_id=self._new_commit_id(), partitions=added, internal=True, deadline=None)
            )
            self.on_pending(now_ms)

    def on_leave_prepare(self, now_ms: int) -> None:
        """Java ``onLeavePrepare``: lost if the generation is gone or a rebalance runs, else revoked."""
        if not self._auto_assigned or not self._assignment:
            return
        owned = tuple(sorted(self._assignment))
        if (
            not self.generation.has_member_id()
            or self.generation.generation_id == -1
            or self.rebalance_in_progress()
        ):
            self._emit_partitions(PartitionsLost(partitions=owned))
        else:
            self._emit_partitions(PartitionsRevoked(partitions=owned))
        self._drop(owned)

    def _emit_partitions(self, event: MemberEvent) -> None:
        self._events.append(event)
        self.hold_join = True

    def _drop(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._assignment.discard(tp)
            self._positions.pop(tp, None)

    def _lookup_assignor(self, name: str) -> Assignor | None:
        for a in self.assignors:
            if a.name == name:
                return a
        return None

    # ================================================================== periodic work
    def on_poll(self, now_ms: int) -> None:
        refreshing = self._pattern is not None or (self.is_leader and self._auto_assigned)
        if refreshing and now_ms >= self.topic_metadata.next_refresh:
            self.topic_metadata.wanted = True
        if (
            self.config.enable_auto_commit
            and self.config.group_id is not None
            and not self._closing
            and now_ms >= self._next_auto_commit
        ):
            self._next_auto_commit = now_ms + self.config.auto_commit_interval_ms
            offsets = self.consumed_positions()
            stable = not self._auto_assigned or self.state is MemberState.STABLE
            if (
                offsets
                and stable
                and (
                    self._auto_commit_in_flight is None
                    or not self._commit_pending(self._auto_commit_in_flight)
                )
            ):
                self._auto_commit_in_flight = self._queue_commit(offsets, now_ms, sync=False, internal=True)

    def on_pending(self, now_ms: int) -> None:
        if self.topic_metadata.wanted and self.topic_metadata.can_send(now_ms):
            topics = (
                None
                if self._pattern is not None
                else tuple(sorted(self._group_subscription | self._subscription))
            )
            self._request_metadata(topics, now_ms)
        self._send_commits(now_ms)
        self._send_fetches(now_ms)
        commit_over = self._close_commit is None or not self._commit_pending(self._close_commit)
        if self._closing and not self._close_done and commit_over:
            if self._auto_assigned:
                self.close_member(now_ms)
            self._close_done = True

    def subclass_deadline(self) -> int | None:
        c: list[int] = []
        if self.config.enable_auto_commit and self.config.group_id is not None and self._assignment:
            c.append(self._next_auto_commit)
        c += self.topic_metadata.deadlines(refreshing=self._pattern is not None or self.is_leader)
        for cm in self._commits:
            c.append(min(cm.deadline, cm.not_before) if self.coordinator is not None else cm.deadline)
        for f in self._fetches:
            if self.coordinator is not None:
                c.append(f.not_before)
            if f.deadline is not None:
                c.append(f.deadline)
        return min(c) if c else None

    # ================================================================== metadata
    def _request_metadata(self, topics: tuple[str, ...] | None, now_ms: int, *, force: bool = False) -> None:
        if self.topic_metadata.request is not None and not force:
            return
        rid = self.send(MetadataRequest(topics=topics), now_ms, api=None, to_coordinator=False)
        self.topic_metadata.sent(rid, topics)

    def _handle_metadata(self, rid: int, response: MetadataResponse | None, now_ms: int) -> None:
        self.topic_metadata.on_response(rid, response, now_ms)
        if response is not None:
            self._apply_pattern()
            self._requests.immediate = True

    def _apply_pattern(self) -> None:
        if self._pattern is not None:
            self._set_subscription(self.topic_metadata.matching(self._pattern))

    # ================================================================== commits
    def _new_commit_id(self) -> int:
        cid = self._next_commit_id
        self._next_commit_id += 1
        return cid

    def _queue_commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], now_ms: int, *, sync: bool, internal: bool
    ) -> int:
        cid = self._new_commit_id()
        items = tuple(sorted(offsets.items()))
        if any(om.offset < 0 for _, om in items):
            raise ValueError("cannot commit a negative offset")
        if not items:
            self._commit_done(
                _Commit(commit_id=cid, offsets=(), sync=sync, internal=internal, deadline=0), None
            )
            return cid
        if self.fatal_error is not None or self.config.group_id is None:
            err = self.fatal_error or KafkaClientError("a commit needs group.id")
            self._commit_done(
                _Commit(commit_id=cid, offsets=items, sync=sync, internal=internal, deadline=0), err
            )
            return cid
        timeout = self.config.default_api_timeout_ms if sync else self.config.request_timeout_ms
        self._commits.append(
            _Commit(commit_id=cid, offsets=items, sync=sync, internal=internal, deadline=now_ms + timeout)
        )
        return cid

    def _commit_pending(self, commit_id: int) -> bool:
        return any(c.commit_id == commit_id for c in self._commits) or any(
            c.commit_id == commit_id for c in self._commits_in_flight.values()
        )

    def _commit_done(self, c: _Commit, error: KafkaClientError | None) -> None:
        if error is not None:
            log.info("group %s: commit %d failed: %s", self.rebalance_config.group_id, c.commit_id, error)
        if not c.internal:
            self._events.append(CommitCompleted(commit_id=c.commit_id, offsets=c.offsets, error=error))

    def _send_commits(self, now_ms: int) -> None:
        keep: list[_Commit] = []
        for c in self._commits:
            if now_ms >= c.deadline:
                self._commit_done(c, KafkaClientError("commit timed out", ErrorCode.REQUEST_TIMED_OUT))
                continue
            if self.coordinator is None or now_ms < c.not_before or self.fatal_error is not None:
                keep.append(c)
                continue
            if self._auto_assigned:
                gen = self.generation_if_stable()
                if gen is None:
                    why = (
                        "the group is rebalancing"
                        if self.rebalance_in_progress()
                        else "the member is not part of an active group"
                    )
                    self._commit_done(c, CommitFailedError(f"commit cannot complete: {why}"))
                    continue
                member_id, generation_id = gen.member_id, gen.generation_id
                instance = self.rebalance_config.group_instance_id
            else:
                member_id, generation_id, instance = "", -1, None
            req = offset_commit_request(
                group_id=self.rebalance_config.group_id,
                generation_id=generation_id,
                member_id=member_id,
                group_instance_id=instance,
                offsets=c.offsets,
            )
            rid = self.send(req, now_ms, api=Api.OFFSET_COMMIT, tag=c)
            self._commits_in_flight[rid] = c
        self._commits = keep

    def _handle_commit(
        self, rid: int, response: OffsetCommitResponse, sent_generation_id: int, now_ms: int
    ) -> None:
        c = self._commits_in_flight.pop(rid, None)
        if c is None:
            return
        code = next((e for _, e in commit_errors(response) if e is not ErrorCode.NONE), ErrorCode.NONE)
        rule = action_for(Api.OFFSET_COMMIT, code)
        a = rule.action
        stale = sent_generation_id != self.generation.generation_id
        if a is Action.SUCCESS:
            self._commit_done(c, None)
        elif a in (Action.REDISCOVER, Action.RETRY):
            if a is Action.REDISCOVER:
                self.mark_coordinator_unknown(f"OffsetCommit: {code.name}", now_ms)
            backoff = self.retry_backoff.backoff(c.attempts)
            if c.sync and now_ms + backoff < c.deadline:
                c.attempts += 1
                c.not_before = now_ms + backoff
                self._commits.append(c)
            else:
                self._commit_done(c, KafkaClientError(f"commit failed (retriable): {code.name}", code))
        elif a is Action.COMMIT_FAILED:
            if rule.rejoin:
                self.request_rejoin("offset commit failed since group is already rebalancing")
            elif (
                stale
                and rule.if_stale is Action.COMMIT_FAILED
                and self.state is MemberState.PREPARING_REBALANCE
            ):
                pass  # a newer generation is being formed: no reset (Java RebalanceInProgressException)
            elif rule.reset:
                self.reset_state_and_rejoin(
                    f"encountered {code.name} from OffsetCommit response", not rule.keep_member_id
                )
            self._commit_done(
                c,
                CommitFailedError(
                    "commit cannot be completed since the group has already rebalanced and assigned the "
                    f"partitions to another member ({code.name})",
                    code,
                ),
            )
        elif a is Action.FATAL:
            if stale and rule.if_stale is Action.COMMIT_FAILED:
                self._commit_done(
                    c, CommitFailedError(f"commit failed: {code.name} for an old generation", code)
                )
            else:
                err = FatalGroupError(f"commit failed: {code.name}", code)
                self._fatal(err)
                self._commit_done(c, err)
        else:
            self._commit_done(c, KafkaClientError(f"commit failed: {code.name}", code))

    # ================================================================== offset fetch
    def _send_fetches(self, now_ms: int) -> None:
        keep: list[_Fetch] = []
        for f in self._fetches:
            if f.internal:
                f.partitions = tuple(tp for tp in f.partitions if tp in self._assignment)
                if not f.partitions:
                    continue
            elif f.deadline is not None and now_ms >= f.deadline:
                self._fetch_done(
                    f, (), KafkaClientError("offset fetch timed out", ErrorCode.REQUEST_TIMED_OUT)
                )
                continue
            if self.coordinator is None or now_ms < f.not_before or self.fatal_error is not None:
                keep.append(f)
                continue
            req = offset_fetch_request(group_id=self.rebalance_config.group_id, partitions=f.partitions)
            rid = self.send(req, now_ms, api=Api.OFFSET_FETCH, tag=f)
            self._fetches_in_flight[rid] = f
        self._fetches = keep

    def _fetch_done(
        self,
        f: _Fetch,
        offsets: tuple[tuple[TopicPartition, OffsetAndMetadata | None], ...],
        error: KafkaClientError | None,
    ) -> None:
        if f.internal:
            if error is None:
                still = tuple((tp, o) for tp, o in offsets if tp in self._assignment)
                self._events.append(StartingPositions(positions=still))
        else:
            self._events.append(CommittedOffsets(fetch_id=f.fetch_id, offsets=offsets, error=error))

    def _handle_fetch(self, rid: int, response: OffsetFetchResponse, now_ms: int) -> None:
        f = self._fetches_in_flight.pop(rid, None)
        if f is None:
            return
        code = fetch_error(response)
        offsets = fetched_offsets(response)
        if code is ErrorCode.NONE:
            code = next((o.error for _, o in offsets if o.error is not ErrorCode.NONE), ErrorCode.NONE)
        rule = action_for(Api.OFFSET_FETCH, code)
        a = rule.action
        if a is Action.SUCCESS:
            got = {
                tp: (
                    OffsetAndMetadata(offset=o.offset, metadata=o.metadata, leader_epoch=o.leader_epoch)
                    if o.offset >= 0
                    else None
                )
                for tp, o in offsets
            }
            self._fetch_done(f, tuple((tp, got.get(tp)) for tp in f.partitions), None)
        elif a in (Action.REDISCOVER, Action.RETRY):
            if a is Action.REDISCOVER:
                self.mark_coordinator_unknown(f"OffsetFetch: {code.name}", now_ms)
            f.not_before = now_ms + self.retry_backoff.backoff(f.attempts)
            f.attempts += 1
            self._fetches.append(f)
        elif a is Action.FATAL:
            err = FatalGroupError(f"offset fetch failed: {code.name}", code)
            self._fatal(err)
            self._fetch_done(f, (), err)
        else:
            err2 = KafkaClientError(f"offset fetch failed: {code.name}", code)
            if f.internal:
                self._report(err2)
            self._fetch_done(f, (), err2)

    # ================================================================== responses
    def on_subclass_response(
        self, request_id: int, tag: object, request: Request, response: Response | None, now_ms: int
    ) -> None:
        if isinstance(request, MetadataRequest):
            self._handle_metadata(
                request_id, response if isinstance(response, MetadataResponse) else None, now_ms
            )
        elif isinstance(request, OffsetCommitRequest) and isinstance(response, OffsetCommitResponse):
            self._handle_commit(request_id, response, request.generation_id, now_ms)
        elif isinstance(request, OffsetFetchRequest) and isinstance(response, OffsetFetchResponse):
            self._handle_fetch(request_id, response, now_ms)


__all__ = [
    "ConsumerCoordinator",
]
