"""``serve``: open the data dir, start the broker, run until SIGTERM/SIGINT, shut down cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import logging
import os
import signal
import socket
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from groupcoord.broker.apis import ApiRoute, build_dispatcher
from groupcoord.broker.group_runtime import GroupRuntime
from groupcoord.broker.groups import routes as group_routes
from groupcoord.broker.state import Broker
from groupcoord.clock import SystemClock
from groupcoord.config import BrokerConfig
from groupcoord.errors import DataDirError
from groupcoord.protocol.registry import ApiRegistry
from groupcoord.server.app import KafkaServer

log = logging.getLogger(__name__)


class StartupError(Exception):
    """The broker cannot start; the message is one line for the operator (the CLI exits 2)."""


def _reason(exc: OSError, subject: Path | None = None) -> str:
    """An OSError as a short phrase: its strerror, and the file it names unless that is ``subject``."""
    if isinstance(exc, socket.gaierror) or not exc.errno:  # a resolver error has no errno's text
        reason = exc.strerror or str(exc)
    else:
        reason = os.strerror(exc.errno)
    if exc.filename is None or (subject is not None and Path(exc.filename) == subject):
        return reason
    return f"{reason}: {exc.filename}"


def _open_broker(config: BrokerConfig, data_dir: Path) -> Broker:
    try:
        if data_dir.exists() and not data_dir.is_dir():
            raise StartupError(f"data dir {data_dir} is not a directory")
        return Broker.open(config, data_dir, SystemClock())
    except DataDirError as exc:
        raise StartupError(str(exc)) from None
    except OSError as exc:
        raise StartupError(f"cannot open data dir {data_dir}: {_reason(exc, data_dir)}") from None


async def _start(
    broker: Broker, config: BrokerConfig, data_dir: Path, extra_apis: list[ApiRoute] | None
) -> tuple[KafkaServer, str, int]:
    """Listen and start the broker's background work; :class:`StartupError` for what an operator can fix."""
    broker.groups = GroupRuntime(broker)
    dispatcher = build_dispatcher(broker, [*group_routes(), *(extra_apis or ())])
    listener = config.listener()
    server = KafkaServer(
        dispatcher,
        host=listener.host,
        port=listener.port,
        max_frame_bytes=config.socket_request_max_bytes,
        connections_max_idle_ms=config.connections_max_idle_ms,
        max_connections=config.max_connections,
        timers=broker.timers,
    )
    try:
        host, port = await server.start()
    except OSError as exc:
        # asyncio's message for a bind failure repeats the address; the errno says it all.
        raise StartupError(f"cannot listen on {listener.host}:{listener.port}: {_reason(exc)}") from None
    try:
        if not config.advertised_listeners:
            broker.advertised_host = host if host not in ("0.0.0.0", "::", "") else "127.0.0.1"
        if broker.advertised_port == 0 or not config.advertised_listeners:
            broker.advertised_port = port
        broker.start_maintenance()
        broker.groups.start()  # creates the internal topics in a new data dir
    except OSError as exc:
        await server.stop()
        raise StartupError(f"cannot start in data dir {data_dir}: {_reason(exc, data_dir)}") from None
    return server, host, port


async def run(
    config: BrokerConfig,
    data_dir: Path,
    *,
    on_listening: Callable[[str, int], None] | None = None,
    stop: asyncio.Event | None = None,
    extra_apis: list[ApiRoute] | None = None,
) -> None:
    """Serve until ``stop`` is set (or SIGTERM/SIGINT); :class:`StartupError` if it cannot start."""
    started = time.monotonic()
    broker = _open_broker(config, data_dir)
    try:
        server, host, port = await _start(broker, config, data_dir, extra_apis)
    except BaseException:
        if broker.groups is not None:
            await broker.groups.close()
        await broker.close()
        raise
    dispatcher = server.dispatcher
    log.info(
        "listening on %s:%d (cluster %s, node %d, data %s) after %.0f ms",
        host,
        port,
        broker.cluster_id,
        broker.node_id,
        data_dir,
        (time.monotonic() - started) * 1000,
    )
    stop_event = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop_event.set)
    if on_listening is not None:
        on_listening(host, port)
    warm = loop.create_task(_settle(dispatcher.registry, broker.groups.loaded))
    try:
        await stop_event.wait()
    finally:
        warm.cancel()
        log.info("shutting down: stop accepting, answer in-flight requests, flush, close")
        # Parked fetches would otherwise hold the drain until their max_wait, and parked
        # joins and syncs until the end of a rebalance.
        broker.fetch_waiters.wake_all()
        broker.groups.resign()
        await server.stop()
        await broker.groups.close()
        await broker.close()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        log.info("stopped")


#: The requests a consumer or producer sends first, built before the rest: bootstrap, group
#: membership, offsets, then data. Highest versions first within each (clients ask for the
#: newest version both sides support).
_FIRST_APIS = (18, 3, 10, 11, 14, 12, 9, 8, 13, 2, 1, 0, 22)


async def warm_codecs(registry: ApiRegistry) -> None:
    """Build every advertised (api, version) codec in the background after listening.

    Codecs are built lazily so that start-up stays short; building one costs up to ~15 ms,
    which a client would otherwise pay on its first request of each kind (a consumer's first
    Fetch, say). Here they are built one at a time between other work on the loop, those
    clients use first before the others.
    """
    ranges = {api_key: (low, high) for api_key, low, high in registry.ranges()}
    order = [k for k in _FIRST_APIS if k in ranges] + sorted(k for k in ranges if k not in _FIRST_APIS)
    for api_key in order:
        low, high = ranges[api_key]
        for version in range(high, low - 1, -1):
            registry.lookup(api_key, version)
            await asyncio.sleep(0)


async def _settle(registry: ApiRegistry, loaded: asyncio.Event) -> None:
    """Warm the codecs, wait for ``__consumer_offsets`` to load, then freeze what exists.

    Everything alive at that point (modules, codecs, the groups just loaded) lives as long as
    the process; ``gc.freeze`` moves it out of the collector's generations, so that a full
    collection later scans only what was made since (about 30 ms saved per full collection
    on this code base's start-up objects alone). No collection is forced first: it would stall
    the loop for as long, and the start-up garbage it would free is small.
    """
    await warm_codecs(registry)
    await loaded.wait()
    gc.freeze()
    log.debug("codecs built and start-up objects frozen")


#: glibc ``mallopt`` parameters (malloc.h) and the values the broker sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_BYTES = 16 * 1024 * 1024
_TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024


def tune_malloc() -> bool:
    """Keep request-sized buffers (up to 16 MiB) on the heap instead of fresh mappings.

    With glibc's defaults every Produce request of about 1 MB is read into a buffer that is
    mmap'ed and unmapped again, and the page faults of that cost about half the broker's CPU
    on uncompressed produce (measured: 0.21-0.39 s of CPU per 100 MB before, 0.11-0.17 s
    after). Freed heap memory above 64 MiB is still given back to the system. Returns
    whether the settings took (False off glibc).
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES))
    return bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES)) and ok


def run_blocking(
    config: BrokerConfig, data_dir: Path, on_listening: Callable[[str, int], None] | None = None
) -> None:
    if not tune_malloc():
        log.debug("mallopt not available: default malloc thresholds")
    asyncio_run = _event_loop_runner()
    asyncio_run(run(config, data_dir, on_listening=on_listening))


def _event_loop_runner() -> Callable[[Coroutine[Any, Any, None]], None]:
    """``uvloop.run`` when uvloop is installed, else ``asyncio.run``.

    Only the import is guarded: the server itself runs outside any ``except`` block, so its
    errors are not reported as raised "during handling of" the ImportError.
    """
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    runner: Callable[[Coroutine[Any, Any, None]], None] = uvloop.run
    return runner
