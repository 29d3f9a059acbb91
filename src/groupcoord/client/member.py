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

Requests to the coordinator carry ``Outbound.node`` = the coordinator's :class:`Node`
(Java connects to it under a separate connection id, ``Integer.MAX_VALUE - node_id``; an
adapter may do the same). ``node`` ``None`` means "any broker", the least-loaded one
(FindCoordinator, Metadata). A change of coordinator is visible as a new ``node``; the
adapter may close the old connection.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass

from groupcoord.client.errors import KafkaClientError
from groupcoord.client.messages import Node, Request, Response

log = logging.getLogger(__name__)

HEARTBEAT_THREAD_PREFIX = "kafka-coordinator-heartbeat-thread"


def heartbeat_thread_name(group_id: str) -> str:
    """``kafka-coordinator-heartbeat-thread | <group.id>`` (Java ``AbstractCoordinator.HeartbeatThread``)."""
    return f"{HEARTBEAT_THREAD_PREFIX} | {group_id}" if group_id else HEARTBEAT_THREAD_PREFIX


@dataclass(frozen=True, kw_only=True, slots=True)
class Outbound:
    """A request to send: ``node`` None = any broker (least-loaded), else the coordinator."""

    request_id: int
    request: Request
    node: Node | None
    timeout_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberEvent:
    """Base of everything :meth:`AbstractCoordinator.events` returns."""


@dataclass(frozen=True, kw_only=True, slots=True)
class FatalErrorEvent(MemberEvent):
    """The member cannot go on (FENCED_INSTANCE_ID, GROUP_AUTHORIZATION_FAILED, ...): the
    adapter raises ``error`` to the application from its next call."""

    error: KafkaClientError


@dataclass(frozen=True, kw_only=True, slots=True)
class Generation:
    """Java ``AbstractCoordinator.Generation``; NO_GENERATION is (-1, "", None)."""

    generation_id: int
    member_id: str
    protocol_name: str | None

    def has_member_id(self) -> bool:
        return self.member_id != ""


NO_GENERATION = Generation(generation_id=-1, member_id="", protocol_name=None)

_ids = itertools.count(1)


class AbstractCoordinator:
    """Skeleton of the driving contract above; the implementation follows in this module."""

    def poll(self, now_ms: int) -> list[Outbound]:
        raise NotImplementedError

    def heartbeat_poll(self, now_ms: int) -> list[Outbound]:
        raise NotImplementedError

    def pending(self, now_ms: int) -> list[Outbound]:
        raise NotImplementedError

    def on_response(self, request_id: int, response: Response, now_ms: int) -> None:
        raise NotImplementedError

    def on_failure(self, request_id: int, now_ms: int) -> None:
        raise NotImplementedError

    def next_deadline_ms(self) -> int | None:
        raise NotImplementedError

    def next_heartbeat_deadline_ms(self) -> int | None:
        raise NotImplementedError

    def events(self) -> list[MemberEvent]:
        raise NotImplementedError
