"""What an in-process test broker's thread needs around its app: its log records, a hard stop.

:class:`~groupcoord.testing.broker.Broker` runs its app on a thread of its own with its own
event loop. This module holds what that thread does beside running the app: the tail of the
broker's log records (:class:`LogTail`, attached to the ``groupcoord`` logger while an
in-process broker runs), the hard stop that imitates a killed process (:func:`crash`, then
:func:`close_metrics` and :func:`abandon_flusher`; the stopped loop is kept in :data:`CRASHED`),
the orderly end of a stopped loop (:func:`finish_loop`), and the URLs of the HTTP endpoints.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

#: The test broker's logger: these lines are the broker's, as before they moved here.
log = logging.getLogger("groupcoord.testing.broker")

#: Loops of hard-stopped in-process brokers: kept referenced (never closed or collected), so
#: that nothing of the abandoned broker runs again, not even its ``finally`` blocks.
CRASHED: list[Any] = []


class LogTail(logging.Handler):
    """The broker thread's log records, the newest ``capacity`` of them."""

    def __init__(self, capacity: int) -> None:
        super().__init__(logging.DEBUG)
        self.lines: collections.deque[str] = collections.deque(maxlen=capacity)
        self.thread_ids: set[int] = set()
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread in self.thread_ids:
            with contextlib.suppress(Exception):
                self.lines.append(self.format(record))


def crash(app: Any, loop: asyncio.AbstractEventLoop) -> None:
    """On the loop: close the listening socket and every connection's socket, then stop
    the loop where it is. Nothing else runs: no answers, no flush, no close."""
    # The servers' listening sockets must go now, so that the restart can bind their ports.
    for server in app.servers:
        listener = getattr(server, "_server", None)
        if listener is None:
            log.error("hard stop: the server has no listening socket to close (KafkaServer changed?)")
        else:
            listener.close()
        for conn in server.connections:
            transport = getattr(conn, "_transport", None)
            sock = transport.get_extra_info("socket") if transport is not None else None
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
    loop.stop()


def sever(app: Any, connection_id: int) -> None:
    """Close one connection of a running app (an injected disconnection)."""
    for server in app.servers:
        for conn in server.connections:
            if conn.connection_id == connection_id:
                conn.abort("disconnected by the test (injected)")


def metrics_url(address: tuple[str, int] | None) -> str | None:
    """The URL a scraper on this host uses for a metrics endpoint bound at ``address``."""
    if address is None:
        return None
    host, port = address
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}/metrics" if ":" in host else f"http://{host}:{port}/metrics"


def console_url(address: tuple[str, int] | None) -> str | None:
    """The URL a browser on this host opens for a console bound at ``address``."""
    url = metrics_url(address)
    return None if url is None else url[: -len("metrics")]


def close_metrics(app: Any) -> None:
    """Close a hard-stopped app's metrics endpoint and console, on a loop of their own (the app's loop
    stays stopped)."""
    for name in ("metrics", "console"):
        endpoint = getattr(app, name, None)
        if endpoint is None:
            continue
        try:
            asyncio.run(endpoint.stop())
        except Exception as exc:
            log.error("hard stop: the %s endpoint did not close: %r", name, exc)


def abandon_flusher(app: Any) -> None:
    """End a hard-stopped broker's fsync thread without flushing what it holds."""
    broker = getattr(app, "broker", None)
    if broker is not None:
        broker.flusher.abandon()
        if broker.logs.journal is not None:  # its file is closed as the kernel would
            broker.logs.journal.abandon()
        # A crashed process's cleaner dies too: a pass in progress ends after its current
        # partition (waited for), so it cannot touch the data dir the restart opens.
        broker.cleaner.abandon()


def finish_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left on a stopped broker's loop and close it (as ``asyncio.run`` does)."""
    with contextlib.suppress(Exception):
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


_log_lock = threading.Lock()
_log_users: list[LogTail] = []
_log_prior_level = logging.NOTSET


def capture_logs(tail: LogTail, level: int) -> None:
    """Attach a broker's log tail to the package logger, lowering its level if need be (the
    level is restored when the last in-process broker stops)."""
    global _log_prior_level
    package_log = logging.getLogger("groupcoord")
    with _log_lock:
        if not _log_users:
            _log_prior_level = package_log.level
        _log_users.append(tail)
        package_log.addHandler(tail)
        if package_log.getEffectiveLevel() > level:
            package_log.setLevel(level)


def release_logs(tail: LogTail) -> None:
    package_log = logging.getLogger("groupcoord")
    with _log_lock:
        package_log.removeHandler(tail)
        if tail in _log_users:
            _log_users.remove(tail)
            if not _log_users:
                package_log.setLevel(_log_prior_level)


async def call_soon(fn: Callable[[], object]) -> None:
    """Run ``fn`` on the broker's event loop, wrapped for ``run_coroutine_threadsafe`` (the ACL
    store is the loop's)."""
    fn()
