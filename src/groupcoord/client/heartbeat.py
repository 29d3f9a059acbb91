"""The heartbeat's timers and the heartbeat thread's name (seed 004, Java ``Heartbeat`` and
``AbstractCoordinator.HeartbeatThread``).

:class:`HeartbeatTimers` keeps the three deadlines the heartbeat thread lives by: the next
heartbeat (``heartbeat.interval.ms``, backed off after a failure), the session
(``session.timeout.ms`` without an answer: the coordinator is marked unknown) and the poll
(``max.poll.interval.ms`` without an application ``poll``: the member leaves). The logic that
reads them, one turn of ``HeartbeatThread.run``, is
:meth:`~groupcoord.client.member.AbstractCoordinator.heartbeat_poll`; the thread that runs it is
:class:`~groupcoord.client.heartbeat_thread.HeartbeatThread` (the asyncio consumer runs the same
turn as a task).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

HEARTBEAT_THREAD_PREFIX = "kafka-coordinator-heartbeat-thread"


def heartbeat_thread_name(group_id: str) -> str:
    """``kafka-coordinator-heartbeat-thread | <group.id>`` (Java ``AbstractCoordinator.HeartbeatThread``)."""
    return f"{HEARTBEAT_THREAD_PREFIX} | {group_id}" if group_id else HEARTBEAT_THREAD_PREFIX


def heartbeat_wait_s(deadline_ms: int | None, now_ms: int) -> float:
    """How long the heartbeat thread sleeps before its next turn: until the core's next heartbeat
    deadline, at least 5 ms (a deadline already due means an answer is awaited: no spinning) and
    at most 100 ms (so that ``enabled`` turning true is seen promptly)."""
    return 0.1 if deadline_ms is None else max(0.005, min(0.1, (deadline_ms - now_ms) / 1000))


class ExponentialBackoff:
    """Java ``ExponentialBackoff(initial, base 2, max, jitter 0.2)``."""

    def __init__(self, initial_ms: int, max_ms: int, rng: random.Random, jitter: float = 0.2) -> None:
        self._initial = max(0, initial_ms)
        self._max = max(self._initial, max_ms)
        self._rng = rng
        self._jitter = jitter

    def backoff(self, attempts: int) -> int:
        if self._initial == 0:
            return 0
        base: int = min(self._max, self._initial * (2 ** min(attempts, 30)))
        if self._jitter:
            base = int(base * self._rng.uniform(1 - self._jitter, 1 + self._jitter))
        return max(0, base)


@dataclass(kw_only=True, slots=True)
class HeartbeatTimers:
    """Java ``Heartbeat``: the heartbeat-interval, session and poll timers (absolute deadlines)."""

    interval_ms: int
    session_ms: int
    poll_ms: int
    backoff: ExponentialBackoff
    next_heartbeat: int = 0
    session_deadline: int = 0
    poll_deadline: int = 0
    in_flight: int | None = None
    attempts: int = 0
    last_poll: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def reset_timeouts(self, now: int) -> None:
        self.next_heartbeat = now + self.interval_ms
        self.session_deadline = now + self.session_ms
        self.poll_deadline = now + self.poll_ms

    def poll(self, now: int) -> None:
        self.last_poll = now
        self.poll_deadline = now + self.poll_ms

    def should_heartbeat(self, now: int) -> bool:
        return now >= self.next_heartbeat

    def sent_heartbeat(self, now: int, request_id: int) -> None:
        self.in_flight = request_id
        self.next_heartbeat = now + self.interval_ms

    def receive_heartbeat(self, now: int) -> None:
        self.in_flight = None
        self.attempts = 0
        self.session_deadline = now + self.session_ms

    def fail_heartbeat(self, now: int) -> None:
        self.in_flight = None
        self.next_heartbeat = now + self.backoff.backoff(self.attempts)
        self.attempts += 1

    def reset_session_timeout(self, now: int) -> None:
        self.session_deadline = now + self.session_ms
