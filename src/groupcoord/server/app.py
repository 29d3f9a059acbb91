"""The TCP server: accept connections, track them, close idle ones, shut down gracefully.

Connection limits, by Kafka's broker property names:

* ``connections.max.idle.ms`` (default 600,000; -1 never): a connection with no bytes in or out
  for longer than this is closed, as Kafka's ``Selector`` does with its idle-expiry manager
  (``Selector.maybeCloseOldestConnection``). A connection the broker still owes an answer (a
  parked JoinGroup, a long-poll Fetch, a response being sent) is not idle. One sweep, on the
  keyed timer service, runs when the least recently active connection could first expire; a
  stalled half-frame therefore holds its bytes for at most this long.
* ``max.connections``, ``max.connections.per.ip`` (+ overrides), ``max.connection.creation.rate``
  and the per-IP ``connection_creation_rate`` quota: Kafka's ``ConnectionQuotas`` (which
  connections wait, which are closed: ``server.connection_quotas``). Every connection goes
  through the :class:`~groupcoord.server.connection_quotas.Acceptor` when it is made.
* ``socket.request.max.bytes``: enforced per frame by the connection (``server.connection``).
* ``queued.max.request.bytes`` (default -1: no bound): the bytes of requests being read and not
  yet handled, broker-wide (``server.memory_pool``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import ssl
from collections.abc import Iterator
from typing import Any

from groupcoord.clock import SystemClock
from groupcoord.handling.loop_timers import LoopTimers
from groupcoord.server.client_quotas import ClientQuotas
from groupcoord.server.connection import KafkaConnection
from groupcoord.server.connection_quotas import LISTEN_BACKLOG, Acceptor, ConnectionQuotas
from groupcoord.server.dispatch import Dispatcher
from groupcoord.server.memory_pool import MemoryPool
from groupcoord.server.output import OUTPUT_HIGH_WATER, OUTPUT_LOW_WATER, Traffic
from groupcoord.server.session import ListenerSecurity
from groupcoord.server.tls_transport import TlsProtocol

log = logging.getLogger(__name__)

#: Kafka's defaults for ``connections.max.idle.ms`` and ``max.connections``.
DEFAULT_CONNECTIONS_MAX_IDLE_MS = 600_000
DEFAULT_MAX_CONNECTIONS = 2_147_483_647

_IDLE_SWEEP_KEY = ("server", "idle-connections")


class KafkaServer:
    def __init__(
        self,
        dispatcher: Dispatcher[Any],
        *,
        host: str,
        port: int,
        max_frame_bytes: int,
        connections_max_idle_ms: int = DEFAULT_CONNECTIONS_MAX_IDLE_MS,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        timers: LoopTimers | None = None,
        security: ListenerSecurity | None = None,
        output_high_water: int = OUTPUT_HIGH_WATER,
        output_low_water: int = OUTPUT_LOW_WATER,
        queued_max_request_bytes: int = -1,
        connection_quotas: ConnectionQuotas | None = None,
        client_quotas: ClientQuotas | None = None,
        connection_ids: Iterator[int] | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        #: this listener's name, protocol, TLS context and SASL settings (``server.session``)
        self.security = security if security is not None else ListenerSecurity()
        self.host = host
        self.port = port
        self.max_frame_bytes = max_frame_bytes
        self.connections_max_idle_ms = connections_max_idle_ms
        self.max_connections = max_connections
        #: max.connections, max.connections.per.ip (+ overrides), max.connection.creation.rate
        #: (``server.connection_quotas``)
        self.connection_quotas = connection_quotas or ConnectionQuotas(max_connections=max_connections)
        #: per connection: answers not yet taken by the client above which it stops being read
        #: (``server.output``, "Bounded output"), and where it resumes
        self.output_high_water = output_high_water
        self.output_low_water = output_low_water
        #: queued.max.request.bytes (None when it is not positive: no bound, Kafka's MemoryPool.NONE)
        self.memory_pool = MemoryPool(queued_max_request_bytes) if queued_max_request_bytes > 0 else None
        #: the keyed timer service (and its clock) the idle sweep runs on
        self.timers = timers or LoopTimers(SystemClock())
        self._server: asyncio.base_events.Server | None = None
        #: this server's idle-sweep timer (several listeners share one timer service)
        self._idle_key = (*_IDLE_SWEEP_KEY, id(self))
        self._connections: set[KafkaConnection] = set()
        #: connection ids (shared by the servers of one process, so that each names one connection)
        self._ids = connection_ids if connection_ids is not None else itertools.count(1)
        #: byte and connection totals (read by the metrics endpoint)
        self.traffic = Traffic()
        self.acceptor = Acceptor(self.connection_quotas, self.timers, self.traffic, self.security.name)
        #: client quotas to enforce (server.client_quotas), None: none
        self.client_quotas = client_quotas

    @property
    def connections(self) -> frozenset[KafkaConnection]:
        return frozenset(self._connections)

    def _new_connection(self) -> asyncio.Protocol:
        self.traffic.accepted += 1
        conn = KafkaConnection(
            self.dispatcher,
            next(self._ids),
            self.max_frame_bytes,
            on_close=self._closed,
            on_made=self.acceptor.arrived,
            client_quotas=self.client_quotas,
            now_ms=self.timers.clock.now_ms,
            traffic=self.traffic,
            session=self.security.new_session(self.timers.clock.now_ms),
            output_high_water=self.output_high_water,
            output_low_water=self.output_low_water,
            memory_pool=self.memory_pool,
        )
        self._connections.add(conn)
        ssl_context = self.security.ssl_context
        if ssl_context is not None:
            return self._tls(conn, ssl_context)
        return conn

    def _tls(self, conn: KafkaConnection, context: ssl.SSLContext) -> asyncio.Protocol:
        """``conn`` behind a TLS layer (``server.tls_transport``): it gets its transport, with
        the client certificate's principal, once the handshake is done; a failed handshake is one
        log line and closes that connection alone."""
        mapper = self.security.map_principal

        def on_handshake(sslobj: ssl.SSLObject) -> None:
            der = sslobj.getpeercert(binary_form=True)
            if der and mapper is not None:
                conn.session.principal = "User:" + mapper(_subject(der))

        def on_refused(reason: str) -> None:
            log.warning("closing conn=%d peer=%s: %s", conn.connection_id, proto.peer(), reason)
            conn.connection_lost(None)

        proto = _TlsProto(conn, context, on_handshake=on_handshake, on_refused=on_refused)
        return proto

    def _closed(self, conn: KafkaConnection) -> None:
        self._connections.discard(conn)
        self.acceptor.closed(conn)

    async def start(self) -> tuple[str, int]:
        """Bind and listen; returns the bound (host, port) (port 0 picks a free one)."""
        loop = asyncio.get_running_loop()
        # Bind one address: a name like "localhost" resolves to several, and with port 0 each
        # would get a different port while only one can be announced.
        infos = await loop.getaddrinfo(self.host or None, self.port, type=socket.SOCK_STREAM)
        address = str(infos[0][4][0])
        self._server = await loop.create_server(
            self._new_connection, address, self.port, reuse_address=True, backlog=LISTEN_BACKLOG
        )
        sock = self._server.sockets[0]
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        bound = sock.getsockname()
        self.port = int(bound[1])
        if self.connections_max_idle_ms >= 0:
            self._schedule_idle_sweep(self.timers.clock.now_ms() + self.connections_max_idle_ms + 1)
        return self.host, self.port

    # ------------------------------------------------------------------ idle connections
    def _schedule_idle_sweep(self, deadline_ms: int) -> None:
        self.timers.schedule(self._idle_key, deadline_ms, self.close_idle_connections)

    def close_idle_connections(self) -> None:
        """Close every connection idle longer than ``connections.max.idle.ms``, then schedule
        the next sweep for when the least recently active of the others could expire."""
        max_idle = self.connections_max_idle_ms
        if max_idle < 0 or self._server is None:
            return
        now = self.timers.clock.now_ms()
        next_expiry = now + max_idle + 1
        for conn in list(self._connections):
            since = conn.idle_since()
            if since is None:
                continue
            if now - since > max_idle:
                conn.close_idle(now - since)
            else:
                next_expiry = min(next_expiry, since + max_idle + 1)
        self._schedule_idle_sweep(next_expiry)

    # ------------------------------------------------------------------ shutdown
    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let every connection answer what it has in flight, then close."""
        self.timers.cancel(self._idle_key)
        if self._server is not None:
            self._server.close()
        drains = [conn.drain() for conn in list(self._connections)]
        if drains:
            _, still = await asyncio.wait(drains, timeout=grace_s)
            if still:
                log.warning("%d connections did not drain within %.1fs; closing them", len(still), grace_s)
        for conn in list(self._connections):
            conn.close_now()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), timeout=1.0)


def _subject(der: bytes) -> str:
    """A certificate's subject in RFC 2253 form (most specific first), as Java's
    ``X500Principal.getName()`` gives it."""
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


class _TlsProto(TlsProtocol):
    def peer(self) -> str:
        raw = self.raw
        where = raw.get_extra_info("peername") if raw is not None else None
        return f"{where[0]}:{where[1]}" if isinstance(where, tuple) and len(where) >= 2 else "?"
