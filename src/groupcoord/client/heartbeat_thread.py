"""``HeartbeatThread``: the member's second thread (seed 002; Java ``AbstractCoordinator.HeartbeatThread``).

One class for both blocking adapters, :class:`~groupcoord.client.Consumer` and
:class:`~groupcoord.client.GroupMember`. The thread is named
``kafka-coordinator-heartbeat-thread | <group.id>``
(:func:`~groupcoord.client.heartbeat.heartbeat_thread_name`) and, each turn, holding the
adapter's lock (Java holds the coordinator's monitor):

1. hands its answered heartbeats (and whatever else it sent) back to the member core;
2. runs one turn of ``HeartbeatThread.run`` - the core's ``heartbeat_poll(now)``, which is
   where the checks of the reference's section 2.3 live (``enabled``, not joined, session
   timeout -> coordinator unknown, poll timeout -> ``maybe_leave_group``, heartbeat due) - and
   sends the requests it returns;
3. then, without the lock, waits for an answer or for the core's next heartbeat deadline (at
   most 100 ms, so that ``enable()`` on the application's thread is seen promptly: the core
   does not notify a condition as Java's ``enable()`` does).

An exception escaping a turn stops the thread and is kept in :attr:`failed`; the application's
thread raises it from its next call through :meth:`check` (Java's ``failed`` reference and
``pollHeartbeat``, AbstractCoordinatorTest ``testUncaughtExceptionInHeartbeatThread``).
:meth:`close` is Java's ``closeHeartbeatThread``: set ``closed``, wake the poller, join outside
the lock.

The core itself is sans-I/O (:mod:`groupcoord.client.member`); this class is the I/O around it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from groupcoord.client.connection import InFlight, NetworkClient
from groupcoord.client.errors import KafkaClientError
from groupcoord.client.heartbeat import heartbeat_thread_name, heartbeat_wait_s
from groupcoord.client.outbox import Outbound

log = logging.getLogger(__name__)

__all__ = ["HeartbeatThread"]


class HeartbeatThread:
    """The heartbeat thread of one blocking member (see the module docstring).

    ``poll`` is the core's ``heartbeat_poll``, ``next_deadline_ms`` its
    ``next_heartbeat_deadline_ms``; ``send`` puts one of the core's requests on the wire and
    ``deliver(out, inflight, now_ms)`` hands a finished one back to the core. All four are called
    with ``lock`` held. ``now_ms`` is the adapter's monotonic clock in milliseconds.
    """

    def __init__(
        self,
        *,
        group_id: str,
        lock: threading.RLock,
        client: NetworkClient,
        poll: Callable[[int], Iterable[Outbound]],
        next_deadline_ms: Callable[[], int | None],
        send: Callable[[Outbound], InFlight],
        deliver: Callable[[Outbound, InFlight, int], None],
        now_ms: Callable[[], int],
    ) -> None:
        self._lock = lock
        self._client = client
        self._poll = poll
        self._next_deadline_ms = next_deadline_ms
        self._send = send
        self._deliver = deliver
        self._now_ms = now_ms
        self._closed = threading.Event()
        #: the exception that stopped the thread, if one did (Java's ``failed``)
        self.failed: BaseException | None = None
        self.thread = threading.Thread(target=self.run, name=heartbeat_thread_name(group_id), daemon=True)

    def start(self) -> None:
        self.thread.start()

    def check(self) -> None:
        """Raise, on the application's thread, the failure that stopped the heartbeat thread."""
        if self.failed is not None:
            error = self.failed
            raise KafkaClientError(f"the heartbeat thread failed: {error!r}") from error

    def close(self, timeout_s: float) -> None:
        """Stop the thread and wait up to ``timeout_s`` for it (call without the lock)."""
        self._closed.set()
        self._client.wakeup()
        if self.thread.is_alive():
            self.thread.join(timeout_s)

    def run(self) -> None:
        mine: list[tuple[InFlight, Outbound]] = []
        try:
            while not self._closed.is_set():
                with self._lock:
                    now = self._now_ms()
                    for inflight, out in [x for x in mine if x[0].done]:
                        mine.remove((inflight, out))
                        self._deliver(out, inflight, now)
                    for out in self._poll(now):
                        mine.append((self._send(out), out))
                    wait_s = heartbeat_wait_s(self._next_deadline_ms(), self._now_ms())
                if mine:
                    self._client.wait([x[0] for x in mine], wait_s)
                else:
                    self._closed.wait(wait_s)
        except Exception as exc:  # surfaces on the application's thread (Java does the same)
            log.exception("heartbeat thread failed")
            self.failed = exc
