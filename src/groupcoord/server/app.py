"""The TCP server: accept connections, track them, shut down gracefully."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
from typing import Any

from groupcoord.server.connection import KafkaConnection
from groupcoord.server.dispatch import Dispatcher

log = logging.getLogger(__name__)


class KafkaServer:
    def __init__(self, dispatcher: Dispatcher[Any], *, host: str, port: int, max_frame_bytes: int) -> None:
        self.dispatcher = dispatcher
        self.host = host
        self.port = port
        self.max_frame_bytes = max_frame_bytes
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[KafkaConnection] = set()
        self._ids = itertools.count(1)

    @property
    def connections(self) -> frozenset[KafkaConnection]:
        return frozenset(self._connections)

    def _new_connection(self) -> KafkaConnection:
        conn = KafkaConnection(
            self.dispatcher, next(self._ids), self.max_frame_bytes, on_close=self._connections.discard
        )
        self._connections.add(conn)
        return conn

    async def start(self) -> tuple[str, int]:
        """Bind and listen; returns the bound (host, port) (port 0 picks a free one)."""
        loop = asyncio.get_running_loop()
        # Bind one address: a name like "localhost" resolves to several, and with port 0 each
        # would get a different port while only one can be announced.
        infos = await loop.getaddrinfo(self.host or None, self.port, type=socket.SOCK_STREAM)
        address = str(infos[0][4][0])
        self._server = await loop.create_server(
            self._new_connection, address, self.port, reuse_address=True, backlog=512
        )
        sock = self._server.sockets[0]
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        bound = sock.getsockname()
        self.port = int(bound[1])
        return self.host, self.port

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let every connection answer what it has in flight, then close."""
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
