"""Process-level helpers of a serving broker: codec warm-up, ``gc.freeze``, malloc tuning, the loop.

What ``groupcoord serve`` wires and runs lives in the composition root (:mod:`groupcoord.app`);
this module knows only the protocol registry and the interpreter.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.registry import ApiRegistry

log = logging.getLogger(__name__)


#: The requests a consumer or producer sends first, built before the rest: bootstrap, group
#: membership, offsets, then data. Highest versions first within each (clients ask for the
#: newest version both sides support).
_FIRST_APIS = (
    ApiKey.API_VERSIONS,
    ApiKey.METADATA,
    ApiKey.FIND_COORDINATOR,
    ApiKey.JOIN_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.OFFSET_FETCH,
    ApiKey.OFFSET_COMMIT,
    ApiKey.LEAVE_GROUP,
    ApiKey.LIST_OFFSETS,
    ApiKey.FETCH,
    ApiKey.PRODUCE,
    ApiKey.INIT_PRODUCER_ID,
)


#: How long no request bytes may arrive before the warm-up builds the next codec (seconds).
WARM_QUIET_S = 0.1


async def warm_codecs(registry: ApiRegistry, activity: Callable[[], int] | None = None) -> None:
    """Build every advertised (api, version) codec in the background after listening.

    Codecs are built lazily so that start-up stays short; building one costs up to ~15 ms,
    which a client would otherwise pay on its first request of each kind (a consumer's first
    Fetch, say). Here they are built one at a time, those clients use first before the others,
    and only while no client is talking: ``activity()`` is a count that grows with every request
    byte read (the server's ``Traffic.bytes_in``), and a codec is built only when it has not
    moved for :data:`WARM_QUIET_S`. All 185 codecs cost about a second of the loop; built
    between requests, they delayed every request of a broker's first second behind one build
    each (acks=all produces 20-140 ms in the first 0.6 s against 0.6 ms later:
    ``bench/first_second_latency.py``, docs/benchmarks.md). A request that finds its codec not
    yet built builds it itself, once.
    """
    ranges = {api_key: (low, high) for api_key, low, high in registry.ranges()}
    order = [k for k in _FIRST_APIS if k in ranges] + sorted(k for k in ranges if k not in _FIRST_APIS)
    pending = [
        (api_key, version)
        for api_key in order
        for version in range(ranges[api_key][1], ranges[api_key][0] - 1, -1)
    ]
    pending.reverse()  # popped from the end: the first to build last in the list
    while pending:
        if activity is not None:
            seen = activity()
            await asyncio.sleep(WARM_QUIET_S)
            if activity() != seen:
                continue
        while pending:
            seen = activity() if activity is not None else 0
            registry.lookup(*pending.pop())
            await asyncio.sleep(0)
            if activity is not None and activity() != seen:
                break


#: Allocations between two young-generation collections while serving (CPython's default: 700).
#: A commit allocates a few dozen container objects that reference counting frees again; at the
#: default a young collection ran every few dozen commits and took about 3.5% of the event
#: loop's time under the many-groups workload (py-spy). A collection costs what survives it,
#: not what was allocated, so collecting 30 times less often costs about 30 times less, and
#: one collection walks at most this many young objects (about a millisecond).
YOUNG_COLLECTION_THRESHOLD = 20_000


async def settle(
    registry: ApiRegistry, loaded: asyncio.Event, activity: Callable[[], int] | None = None
) -> None:
    """Wait for ``__consumer_offsets`` to load, freeze what exists, then warm the codecs.

    Everything alive at that point (modules, the groups just loaded) lives as long as
    the process; ``gc.freeze`` moves it out of the collector's generations, so that a full
    collection later scans only what was made since (about 30 ms saved per full collection
    on this code base's start-up objects alone). No collection is forced first: it would stall
    the loop for as long, and the start-up garbage it would free is small.

    Then the young generation's threshold is raised (:data:`YOUNG_COLLECTION_THRESHOLD`), and
    the codecs are built while clients are quiet (:func:`warm_codecs`, which may take long
    under steady traffic); once all are built they are frozen too.
    """
    await loaded.wait()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])
    await warm_codecs(registry, activity)
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


def event_loop_runner() -> Callable[[Coroutine[Any, Any, None]], None]:
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
