"""What the broker's two HTTP endpoints share: a server on a daemon thread of its own that
reads the broker's state only through the broker's event loop.

The Prometheus endpoint (:class:`~groupcoord.metrics.endpoint.BrokerMetrics`) and the web
console (:class:`~groupcoord.console.server.BrokerConsole`) both answer on threads of their own
(a standard-library ``socketserver`` with threads) and never touch the loop's state from there:
:meth:`LoopHttpEndpoint.on_loop` runs a coroutine on the loop
(``asyncio.run_coroutine_threadsafe``) and waits a bounded time for it. Each subclass says how its
server is made (:meth:`LoopHttpEndpoint.make_server`); binding, the serving thread, stopping and
the loop round trip are here, once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import socket
import socketserver
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["LoopHttpEndpoint", "bindable", "url_host"]

T = TypeVar("T")
S = TypeVar("S", bound=socketserver.TCPServer)


def bindable(server_class: type[S], host: str, port: int) -> type[S]:
    """``server_class`` with the address family of ``host`` (IPv6 if the host is)."""
    family = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    return type(server_class.__name__, (server_class,), {"address_family": family})


def url_host(address: tuple[str, int]) -> tuple[str, int]:
    """(host as a URL writes it, port): ``[::1]``, and ``0.0.0.0`` for every address."""
    host, port = address
    return (f"[{host}]" if ":" in host else host or "0.0.0.0"), port


class LoopHttpEndpoint:
    """An HTTP server on a daemon thread that asks the broker's loop for what it shows.

    Args:
        host, port: where to listen (port 0 picks a free one).
        what: the endpoint's name in its thread's name (``metrics``).
        says: how its log lines begin (``metrics scrape``).
        log: the subclass's logger (its lines keep the subclass's module name).
        timeout_s: how long :meth:`on_loop` waits (:attr:`snapshot_timeout_s`, changeable).

    :meth:`start` (on the broker's loop) binds and returns the bound (host, port), also kept in
    :attr:`address`; :meth:`stop` closes it.
    """

    def __init__(
        self, *, host: str, port: int, what: str, says: str, log: logging.Logger, timeout_s: float
    ) -> None:
        self.host = host
        self.port = port
        self.address: tuple[str, int] | None = None
        #: how long a request waits for the loop's answer
        self.snapshot_timeout_s = timeout_s
        self._what = what
        self._says = says
        self._log = log
        self._loop: asyncio.AbstractEventLoop | None = None
        self._httpd: socketserver.TCPServer | None = None
        self._thread: threading.Thread | None = None
        #: set by :meth:`stop`: no more round trips to the loop, open streams end
        self._closing = threading.Event()

    def make_server(self) -> socketserver.TCPServer:
        """The bound server (its class through :func:`bindable`); OSError if it cannot bind."""
        raise NotImplementedError

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> tuple[str, int]:
        """Listen (on the broker's loop); the bound (host, port). Raises OSError."""
        self._loop = asyncio.get_running_loop()
        httpd = self.make_server()
        port = int(httpd.server_address[1])
        thread = threading.Thread(
            target=httpd.serve_forever, name=f"groupcoord-{self._what}-{port}", daemon=True
        )
        thread.start()
        self._httpd, self._thread = httpd, thread
        self.address = (self.host, port)
        return self.address

    async def stop(self) -> None:
        """Close the server (its shutdown waits up to half a second, off the loop)."""
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        self._closing.set()
        if httpd is None:
            return
        await asyncio.to_thread(httpd.shutdown)
        httpd.server_close()
        if thread is not None:
            await asyncio.to_thread(thread.join, 5.0)

    # ------------------------------------------------------------------ the loop, from a thread
    def on_loop(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T | None:
        """Run a coroutine on the broker's loop and wait for it (None: the loop is gone, the
        endpoint is closing, or the loop was busy past :attr:`snapshot_timeout_s`)."""
        loop = self._loop
        if loop is None or loop.is_closed() or self._closing.is_set():
            return None
        coro = make()
        try:
            future = asyncio.run_coroutine_threadsafe(coro, loop)
        except RuntimeError:  # the loop closed meanwhile
            coro.close()
            return None
        try:
            return future.result(self.snapshot_timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            self._log.warning(
                "%s: the event loop gave no snapshot within %.1f s", self._says, self.snapshot_timeout_s
            )
        except Exception as exc:
            self._log.warning("%s: no snapshot: %r", self._says, exc)
        return None
