"""Connection quotas with Kafka's semantics (``SocketServer``'s ``ConnectionQuotas`` and its
``Acceptor``; ``ConnectionQuotasTest``).

Which connections wait and which are closed:

* ``max.connections`` (broker-wide, across all listeners, default 2,147,483,647) and
  ``listener.name.<listener>.max.connections`` (one listener's, default the same): a connection
  made while either is reached **waits** (``connectionSlotAvailable``: the listener's count below
  its maximum and the broker's total below the broker's; one :class:`ConnectionQuotas` serves
  every listener's acceptor, and a connection closing on one listener wakes the acceptors of
  all, as Kafka's ``dec`` notifies every waiting acceptor). Kafka exempts the inter-broker
  listener from the broker-wide limit and closes another listener's least recently used
  connection for it (KIP-402); a single broker has no inter-broker listener, so every listener
  counts. Waiting: Kafka's acceptor stops accepting (``waitForConnectionSlot``) and new
  connections sit in the listen backlog, connected but unread, until one closes. Here the
  acceptor takes them in the order they arrived, holds each unread (the client sees exactly
  what a backlogged connection shows it) and admits the oldest when a slot frees. Only past
  the listen backlog (512), where the kernel would stop completing handshakes, is a
  connection closed at once, with one WARNING line.
* ``max.connection.creation.rate`` (broker-wide, per second, default 2,147,483,647): every
  accepted connection is recorded in a rate over ``quota.window.num`` windows of
  ``quota.window.size.seconds``; when the rate is above the limit, the acceptor **waits** the
  throttle time (``QuotaUtils.throttleTime``, capped at one window) before it admits that
  connection and any after it (``recordConnectionAndGetThrottleTimeMs``).
* ``max.connections.per.ip`` (default 2,147,483,647) and ``max.connections.per.ip.overrides``
  (``host:count,...``; host names resolved at start): a connection from an address that
  already has its maximum is **closed** at once, logged at INFO as Kafka's acceptor does:
  ``Rejected connection from <ip>, address already has the configured maximum of <n>
  connections.`` (``TooManyConnectionsException``).
* the per-IP ``connection_creation_rate`` client quota (KIP-612, set with AlterClientQuotas on an
  ``ip`` entity), when a quota source is given: a connection over that rate is **closed after
  the throttle time** (``ConnectionThrottledException``: Kafka keeps the socket and closes it
  when the delay ends, so the client's reconnect is slowed down) and is not counted.
"""

from __future__ import annotations

import logging
import socket
from collections import deque
from collections.abc import Callable, Mapping
from typing import Protocol

from groupcoord.constants import INT32_MAX
from groupcoord.handling.loop_timers import LoopTimers
from groupcoord.server.output import Traffic
from groupcoord.server.rate import Rate

log = logging.getLogger(__name__)

#: the listen backlog the server binds with: beyond this many connections waiting for a slot,
#: Kafka's kernel queue would be full too, so a further one is closed at once
LISTEN_BACKLOG = 512

#: Kafka's QuotaConfig.IP_CONNECTION_RATE_DEFAULT: no per-IP creation rate
NO_IP_RATE = INT32_MAX


def resolve_overrides(overrides: Mapping[str, int]) -> dict[str, int]:
    """``max.connections.per.ip.overrides`` keyed by address (``InetAddress.getByName``)."""
    out: dict[str, int] = {}
    for host, count in overrides.items():
        try:
            address = socket.gethostbyname(host)
        except OSError:
            log.warning("max.connections.per.ip.overrides: cannot resolve %s; using it as given", host)
            address = host
        out[address] = count
    return out


class ConnectionQuotas:
    """Counts per address and the broker-wide creation rate; the decisions of Kafka's
    ``ConnectionQuotas.inc`` / ``dec``, driven by the server's acceptor."""

    def __init__(
        self,
        *,
        max_connections: int = INT32_MAX,
        max_connections_per_ip: int = INT32_MAX,
        overrides: Mapping[str, int] | None = None,
        max_connection_creation_rate: int = INT32_MAX,
        quota_window_num: int = 11,
        quota_window_size_seconds: int = 1,
        ip_connection_rate: Callable[[str], int] | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self.overrides = resolve_overrides(overrides or {})
        self.max_connection_creation_rate = max_connection_creation_rate
        self.counts: dict[str, int] = {}
        self.total = 0
        #: listener.name.<listener>.max.connections by listener name (upper case); absent: no
        #: limit of its own
        self.listener_max: dict[str, int] = {}
        self.listener_counts: dict[str, int] = {}
        #: every acceptor sharing these quotas, woken when a slot frees anywhere
        self._acceptors: list[Acceptor] = []
        window_ms = quota_window_size_seconds * 1000
        self._samples = quota_window_num
        self._window_ms = window_ms
        self._broker_rate = Rate(quota_window_num, window_ms)
        self._ip_rates: dict[str, Rate] = {}
        #: Kafka caps a connection-rate throttle at one quota window
        self.max_throttle_ms = window_ms
        #: the per-IP connection_creation_rate quota of an address (NO_IP_RATE: none)
        self.ip_connection_rate = ip_connection_rate

    def record_connection_and_throttle_ms(self, now_ms: int) -> int:
        """Record one new connection in the broker-wide rate; how long the acceptor waits."""
        throttle = self._broker_rate.record_and_throttle_ms(1.0, self.max_connection_creation_rate, now_ms)
        return min(throttle, self.max_throttle_ms)

    def slot_available(self, listener: str = "") -> bool:
        """``connectionSlotAvailable``: below the listener's maximum and the broker's."""
        if self.listener_counts.get(listener, 0) >= self.listener_max.get(listener, INT32_MAX):
            return False
        return self.total < self.max_connections

    def ip_throttle_ms(self, ip: str, now_ms: int) -> int:
        """The per-IP creation-rate throttle of a new connection from ``ip`` (0: accepted); a
        throttled connection is not recorded (Kafka un-records it)."""
        lookup = self.ip_connection_rate
        if lookup is None:
            return 0
        limit = lookup(ip)
        if limit >= NO_IP_RATE:
            return 0
        rate = self._ip_rates.get(ip)
        if rate is None:
            rate = self._ip_rates[ip] = Rate(self._samples, self._window_ms)
        throttle = min(rate.record_and_throttle_ms(1.0, limit, now_ms), self.max_throttle_ms)
        if throttle:
            rate.record(-1.0, now_ms)
            self._broker_rate.record(-1.0, now_ms)
        return throttle

    def max_for(self, ip: str) -> int:
        return self.overrides.get(ip, self.max_connections_per_ip)

    def inc(self, ip: str, listener: str = "") -> bool:
        """Count a connection from ``ip`` on ``listener``; False when the address already had its
        maximum (the caller closes it and calls :meth:`dec`, as Kafka's acceptor does)."""
        count = self.counts.get(ip, 0)
        self.counts[ip] = count + 1
        self.listener_counts[listener] = self.listener_counts.get(listener, 0) + 1
        self.total += 1
        return count < self.max_for(ip)

    def dec(self, ip: str, listener: str = "") -> None:
        count = self.counts.get(ip, 0)
        if count <= 1:
            self.counts.pop(ip, None)
        else:
            self.counts[ip] = count - 1
        self.listener_counts[listener] = self.listener_counts.get(listener, 0) - 1
        self.total -= 1

    def attach(self, acceptor: Acceptor) -> None:
        self._acceptors.append(acceptor)

    def slot_freed(self) -> None:
        """A connection closed somewhere: every acceptor may admit a waiting one."""
        for acceptor in tuple(self._acceptors):
            acceptor.run()


class Acceptor:
    """Admits connections in arrival order under :class:`ConnectionQuotas` (Kafka's
    ``Acceptor.acceptNewConnections`` + ``ConnectionQuotas.inc``): holds those that must wait,
    closes those refused; its waits run on the keyed timer service (``timers``)."""

    def __init__(
        self, quotas: ConnectionQuotas, timers: LoopTimers, traffic: Traffic, listener: str = ""
    ) -> None:
        self.quotas = quotas
        #: the listener this acceptor serves (its name, as in ``listeners``)
        self.listener = listener
        quotas.attach(self)
        self._timers = timers
        self._traffic = traffic
        self._waiting: deque[_Admittable] = deque()
        #: the head of the queue was recorded in the creation rate; the acceptor waits until then
        self._head_recorded = False
        self._blocked_until = 0

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def arrived(self, conn: _Admittable) -> None:
        if len(self._waiting) >= LISTEN_BACKLOG:
            self._traffic.refused += 1
            log.warning(
                "refusing connection from %s: max.connections=%d reached and %d connections already "
                "wait (the listen backlog)",
                conn.client_ip,
                self.quotas.max_connections,
                LISTEN_BACKLOG,
            )
            conn.refuse()
            return
        self._waiting.append(conn)
        self.run()

    def closed(self, conn: _Admittable) -> None:
        """A connection is gone: free its slot (if it had one) and admit whoever waits."""
        if conn.counted:
            conn.counted = False
            self.quotas.dec(conn.client_ip, self.listener)
            self.quotas.slot_freed()
        else:
            self.run()

    def run(self) -> None:
        quotas = self.quotas
        waiting = self._waiting
        while waiting:
            conn = waiting[0]
            if conn.closed:
                waiting.popleft()
                self._head_recorded = False
                continue
            now = self._timers.clock.now_ms()
            if not self._head_recorded:
                self._head_recorded = True
                delay = quotas.record_connection_and_throttle_ms(now)
                if delay > 0:
                    self._blocked_until = now + delay
            if now < self._blocked_until:
                self._timers.schedule(("server", "acceptor"), self._blocked_until, self.run)
                return
            if not quotas.slot_available(self.listener):
                return  # woken by a close on any listener (ConnectionQuotas.slot_freed)
            waiting.popleft()
            self._head_recorded = False
            self._admit(conn, now)

    def _admit(self, conn: _Admittable, now: int) -> None:
        quotas = self.quotas
        ip = conn.client_ip
        throttle = quotas.ip_throttle_ms(ip, now)
        if throttle:
            log.debug("Delaying closing of connection from %s for %d ms", ip, throttle)
            key = ("server", "throttled-close", conn.connection_id)
            self._timers.schedule(key, now + throttle, conn.close_now)
            return
        conn.counted = True
        if not quotas.inc(ip, self.listener):
            self._traffic.refused += 1
            log.info(
                "Rejected connection from %s, address already has the configured maximum of %d connections.",
                ip,
                quotas.max_for(ip),
            )
            conn.refuse()
            return
        conn.admit()


class _Admittable(Protocol):
    """What the acceptor needs of a connection (``server.connection.KafkaConnection``)."""

    counted: bool
    connection_id: int

    @property
    def closed(self) -> bool: ...
    @property
    def client_ip(self) -> str: ...
    def admit(self) -> None: ...
    def refuse(self) -> None: ...
    def close_now(self) -> None: ...
